"""The demo: a switchable web service (``service``) and the four demo modes (``modes``)."""
