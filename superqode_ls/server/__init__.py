"""The SuperQode language server: a thin pygls adapter over the QE engine.

One module per feature; ``server.py`` wires them together. Heavy imports (the
pipeline, roles) are deferred until a session actually starts.
"""
