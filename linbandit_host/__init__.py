"""What the host allows and how the user is told: the memory limit envs and agents check sizes
against and the one way sizes are read and written (:mod:`linbandit_host.memory`), the one seed
rule (:mod:`linbandit_host.seeds`), and warnings attributed to the user's line
(:mod:`linbandit_host.user_line`). Standard library only: the bottom layer, below ``agents`` and
``linbandit_gym``, which both use it without importing each other."""
