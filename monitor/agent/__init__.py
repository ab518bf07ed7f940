"""The agent: a smolagents ``ToolCallingAgent`` that investigates an incident with tools and memory.

models.py       model choice (Ollama, any OpenAI-compatible server, or builtin), built for small models
triage.py       builtin: the deterministic model that needs no LLM
seam.py         what monitor uses of smolagents, typed (stubs in typings/smolagents)
loop.py         the step loop: one step at a time, each saved as it ends, guided for small models
investigator.py Investigator: one investigation from task to diagnosis, with its working memory
diagnosis.py    what an investigation ends with
tools/          what the agent may call: check, recent results, incidents, neighbours, remediate
prompts/        every prompt the agent sees, in YAML
"""
