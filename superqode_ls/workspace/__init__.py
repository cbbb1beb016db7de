"""The isolation engine: sandboxes, fingerprints, change tracking, artifacts.

Nothing here imports the language-server layer.
"""
