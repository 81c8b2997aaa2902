"""make wheel: the patched wheel, built by upstream's own build at the set's ref (command.py):
its flags read at the ref (flags.py), the devel image or this machine (place.py), the
persistent build tree and compiler cache (tree.py), the build's output read as it goes
(output.py), the jobs from the memory the build may use (jobs.py)."""
