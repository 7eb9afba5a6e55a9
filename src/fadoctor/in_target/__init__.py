"""The code fadoctor runs inside the target interpreter: standard library only, Python 3.8 syntax.

Each stage is one module here with a `run(context, **params)` that returns plain data; the stage
registry (`registry.py`) declares every stage once, and `worker.py` runs a list of them. The
package is run by path (`python -B <this folder>/__main__.py`) under its own name,
`_fadoctor_target`, and never from `sys.path`, so none of its module names can shadow the user's.
"""
