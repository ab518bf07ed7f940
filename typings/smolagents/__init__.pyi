# The part of smolagents 1.26 that monitor uses, typed. tests/test_seam.py checks these stubs against the
# installed smolagents (mypy's stubtest), so a rename or a changed signature fails a test.
from smolagents.agents import ToolCallingAgent as ToolCallingAgent
from smolagents.models import LiteLLMModel as LiteLLMModel
from smolagents.models import Model as Model
from smolagents.tools import Tool as Tool

__version__: str
