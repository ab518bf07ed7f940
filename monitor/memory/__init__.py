"""Memory: what the agent carries between investigations and recalls from past incidents.

    working.py      working memory: step callbacks, compaction, persistence, the start-of-run recall
    recall.py       recall for one investigation: candidates by meaning (vectors), words and shared
                    components, fused by rank, and the one whose fix applies, or none
    attribution.py  honest summaries: only this investigation's words and the chosen fix, attributed
    findings.py     what an investigation found, in one sentence of facts (never a dump of the answer)
    graph.py, components.py
                    the fleet's graph: what targets depend on, from config, answers and co-occurring incidents
    forgetting.py   what an incident memory is worth over time; pruning the least valuable
    transcripts.py  stored runs as smolagents' full, succinct and messages forms, and back
    review.py       `monitor review`: the history handed to a second agent
    exports.py      the memory export file, checked before an import writes anything
    embedding.py    the embedders: builtin multilingual-e5-small (offline), or a model server's
    search.py       full text and vectors fused by reciprocal rank; embedding incidents in batches
Vectors are stored and searched in monitor/store/vectors.py.
"""
