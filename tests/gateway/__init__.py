# pytest imports this directory as the package `gateway` (tests/ is on sys.path, this file makes it a package),
# shadowing the top-level `gateway`; its submodules would then resolve through the editable install, i.e. to
# another checkout's code in a worktree. Searching the real package's directory too keeps them this checkout's.
import pathlib

__path__.append(str(pathlib.Path(__file__).resolve().parents[2] / "gateway"))  # noqa: F821 - the package's path
