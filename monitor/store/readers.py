"""The read-only parts a reader is handed: the web UI, status pages, MCP and the review read through these.

Each class is one part's reads, named one by one and bound at construction to the store's methods, and nothing
else: a write is not there (``AttributeError``, and mypy refuses the call), the way a SQLite connection opened
with ``mode=ro`` has no way to write. :class:`ReadOnly` hands them out under the store's own names::

    reader = store.read_only()
    reader.incidents.open_incidents()     # IncidentsReader
    reader.incidents.close_incident(1)    # AttributeError: no such attribute (mypy: "IncidentsReader" has no attribute)

Each class satisfies its view in :mod:`monitor.store.parts` (``IncidentsView``, ...); ``tests/test_store_parts.py``
holds that each names exactly its view's methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from monitor.store import parts


class ResultsReader:
    """The reads of ``store.results`` (:class:`~monitor.store.parts.ResultsView`)."""

    def __init__(self, part: parts.ResultsView) -> None:
        self.count_results = part.count_results
        self.heartbeat = part.heartbeat
        self.latency_buckets = part.latency_buckets
        self.latest_by_location = part.latest_by_location
        self.latest_of = part.latest_of
        self.latest_result = part.latest_result
        self.latest_results = part.latest_results
        self.latest_states = part.latest_states
        self.recent_results = part.recent_results
        self.results_between = part.results_between
        self.results_page = part.results_page
        self.target_names = part.target_names
        self.uptime = part.uptime
        self.uptimes = part.uptimes


class IncidentsReader:
    """The reads of ``store.incidents`` (:class:`~monitor.store.parts.IncidentsView`)."""

    def __init__(self, part: parts.IncidentsView) -> None:
        self._part = part
        self.count_incidents = part.count_incidents
        self.count_open_incidents = part.count_open_incidents
        self.incident = part.incident
        self.incident_counts = part.incident_counts
        self.incident_key = part.incident_key
        self.incident_links = part.incident_links
        self.incidents_by_id = part.incidents_by_id
        self.incidents_page = part.incidents_page
        self.last_resolved_incident = part.last_resolved_incident
        self.open_incidents = part.open_incidents
        self.open_targets = part.open_targets
        self.recent_incidents = part.recent_incidents
        self.resolution_notes = part.resolution_notes
        self.search_incidents = part.search_incidents
        self.similar_incidents = part.similar_incidents
        self.web_actions = part.web_actions
        self.word_frequency = part.word_frequency

    @property
    def install_id(self) -> str:
        return self._part.install_id


class OutboxReader:
    """The reads of ``store.outbox`` (:class:`~monitor.store.parts.OutboxView`)."""

    def __init__(self, part: parts.OutboxView) -> None:
        self.due_notifications = part.due_notifications
        self.due_receivers = part.due_receivers
        self.held = part.held
        self.last_sent = part.last_sent
        self.notifications_for = part.notifications_for
        self.outage_of = part.outage_of
        self.pending_notifications = part.pending_notifications
        self.pending_under = part.pending_under
        self.told = part.told


class RunsReader:
    """The reads of ``store.runs`` (:class:`~monitor.store.parts.RunsView`)."""

    def __init__(self, part: parts.RunsView) -> None:
        self.last_run_id = part.last_run_id
        self.recall_steps = part.recall_steps
        self.recent_runs = part.recent_runs
        self.remediations = part.remediations
        self.run = part.run
        self.running_incidents = part.running_incidents
        self.runs_page = part.runs_page
        self.runs_since = part.runs_since
        self.runs_started = part.runs_started
        self.step_stats = part.step_stats
        self.steps = part.steps


class MemoryReader:
    """The reads of ``store.memory`` (:class:`~monitor.store.parts.MemoryView`)."""

    def __init__(self, part: parts.MemoryView) -> None:
        self.counts = part.counts
        self.dump = part.dump
        self.load_memory = part.load_memory
        self.memory_samples = part.memory_samples


class ImportanceReader:
    """The reads of ``store.importance`` (:class:`~monitor.store.parts.ImportanceView`)."""

    def __init__(self, part: parts.ImportanceView) -> None:
        self.forgettable = part.forgettable
        self.incident_history = part.incident_history
        self.pruned = part.pruned
        self.recalls = part.recalls


class GraphReader:
    """The reads of ``store.graph`` (:class:`~monitor.store.parts.GraphView`)."""

    def __init__(self, part: parts.GraphView) -> None:
        self.edges_from = part.edges_from
        self.edges_to = part.edges_to
        self.incidents_mentioning = part.incidents_mentioning
        self.incidents_naming = part.incidents_naming
        self.incidents_of = part.incidents_of
        self.opened_between = part.opened_between


class VectorsReader:
    """The reads of ``store.vectors`` (:class:`~monitor.store.parts.VectorsView`)."""

    def __init__(self, part: parts.VectorsView) -> None:
        self.cosines = part.cosines
        self.count_vectors = part.count_vectors
        self.embed_pending = part.embed_pending
        self.incidents_to_embed = part.incidents_to_embed
        self.nearest = part.nearest
        self.vector_backend = part.vector_backend


class PublicReader:
    """The reads of ``store.public`` (:class:`~monitor.store.parts.PublicView`)."""

    def __init__(self, part: parts.PublicView) -> None:
        self.daily_uptime = part.daily_uptime
        self.public_incidents = part.public_incidents
        self.public_notes = part.public_notes


class ChangesReader:
    """The reads of ``store.changes`` (:class:`~monitor.store.parts.ChangesView`)."""

    def __init__(self, part: parts.ChangesView) -> None:
        self.config_changes = part.config_changes


class Readable(
    parts.ResultsView,
    parts.IncidentsView,
    parts.OutboxView,
    parts.RunsView,
    parts.MemoryView,
    parts.ImportanceView,
    parts.GraphView,
    parts.VectorsView,
    parts.PublicView,
    parts.ChangesView,
    Protocol,
):
    """What a reader is made from: every part's reads (a :class:`~monitor.store.Store` has them), its clock and size."""

    clock: Callable[[], float]

    def size_bytes(self) -> int: ...


class ReadOnly:
    """A store's parts as readers (:class:`~monitor.store.parts.StoreView`): every read, no write; and the store's
    clock and size."""

    def __init__(self, store: Readable) -> None:
        self.results = ResultsReader(store)
        self.incidents = IncidentsReader(store)
        self.outbox = OutboxReader(store)
        self.runs = RunsReader(store)
        self.memory = MemoryReader(store)
        self.importance = ImportanceReader(store)
        self.graph = GraphReader(store)
        self.vectors = VectorsReader(store)
        self.public = PublicReader(store)
        self.changes = ChangesReader(store)
        self.clock = store.clock
        self.size_bytes = store.size_bytes
