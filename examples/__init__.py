"""Files the README and the guides run: an agent of your own (:mod:`examples.mymodule`) and a
sweep config (``my_sweep.yaml``). A package, so that ``examples.mymodule:MyAgent`` resolves
to this directory from the repository's root (the current directory comes first)."""
