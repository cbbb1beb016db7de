"""The guard's policy tables: read-only subcommands, subcommands blocked
outright, environment variables and config keys that redirect git or run
commands, git's global options. Data only (stdlib, no imports at all): the
shim loads it on every judged git call.
"""

from __future__ import annotations

_READ_ONLY = frozenset(
    [
        "status",
        "diff",
        "log",
        "show",
        "blame",
        "annotate",
        "grep",
        "ls-files",
        "ls-tree",
        "rev-parse",
        "rev-list",
        "cat-file",
        "describe",
        "shortlog",
        "show-ref",
        "for-each-ref",
        "name-rev",
        "merge-base",
        "diff-tree",
        "diff-files",
        "diff-index",
        "version",
        "help",
        "whatchanged",
        "cherry",
        "range-diff",
        "var",
        "check-ignore",
        "check-attr",
        "check-ref-format",
        "check-mailmap",
        "count-objects",
        "verify-commit",
        "verify-tag",
        "verify-pack",
        "show-branch",
        "ls-remote",
        "archive",
        "format-patch",
        "difftool",
        "get-tar-commit-id",
        "column",
        "stripspace",
        "interpret-trailers",
        "patch-id",
        "request-pull",
        "fast-export",
        "merge-tree",
        "merge-file",
        "show-index",
        "unpack-file",
        "mailinfo",
        "mailsplit",
        "shell-quote",
    ]
)

# subcommand -> (reason, suggestion) when blocked outright.
_R = {
    "commit": (
        "Commits would permanently alter repository history",
        "leave changes uncommitted; SuperQode collects sandbox changes as patches",
    ),
    "push": (
        "Pushing would publish commits to another repository",
        "propose changes as patches; push from your own checkout",
    ),
    "pull": (
        "Pulling fetches and merges, rewriting refs and the working tree",
        "use `git log`/`git diff` against refs that already exist",
    ),
    "fetch": (
        "Fetching updates remote-tracking refs and contacts remotes",
        "work with the refs already in the repository",
    ),
    "clone": (
        "Cloning creates a new repository and contacts remotes",
        "read files from the sandbox instead",
    ),
    "init": (
        "Initialising would create or reinitialise a repository",
        "work in the sandbox's existing repository",
    ),
    "reset": (
        "Reset moves HEAD and rewrites the index, and can discard work",
        "inspect with `git diff` / `git log`; SuperQode restores sandboxes itself",
    ),
    "checkout": (
        "Checkout moves HEAD and overwrites working files",
        "read another version with `git show REV:PATH`",
    ),
    "switch": (
        "Switching branches moves HEAD and overwrites working files",
        "read another version with `git show REV:PATH`",
    ),
    "restore": (
        "Restore overwrites working files or the index",
        "read the committed version with `git show HEAD:PATH`",
    ),
    "add": (
        "Staging changes modifies the index",
        "leave changes unstaged; SuperQode records working-tree changes itself",
    ),
    "rm": (
        "git rm deletes files and modifies the index",
        "delete files directly if needed; the index stays as it is",
    ),
    "mv": (
        "git mv renames files in the index",
        "move files directly if needed; the index stays as it is",
    ),
    "stash": (
        "Stash rewrites the working tree and the stash ref",
        "inspect with `git stash list` / `git stash show`",
    ),
    "merge": (
        "Merging creates commits and moves refs",
        "preview with `git merge-tree` or `git diff A...B`",
    ),
    "rebase": ("Rebasing rewrites repository history", "inspect with `git log` / `git range-diff`"),
    "cherry-pick": (
        "Cherry-picking creates commits",
        "apply a diff to the working tree with `git diff A B | git apply`",
    ),
    "revert": ("Reverting creates commits", "show the inverse change with `git diff B A`"),
    "am": (
        "git am creates commits from patches",
        "apply the patch to the working tree with `git apply`",
    ),
    "gc": (
        "Garbage collection can permanently delete unreachable objects",
        "use `git count-objects -v` to inspect the object store",
    ),
    "prune": (
        "Pruning permanently deletes unreachable objects",
        "use `git fsck --unreachable` to inspect",
    ),
    "prune-packed": ("Pruning rewrites the object store", "nothing to do inside a sandbox"),
    "repack": ("Repacking rewrites the object store", "nothing to do inside a sandbox"),
    "pack-refs": ("Packing refs rewrites the ref store", "read refs with `git show-ref`"),
    "maintenance": (
        "Maintenance rewrites the object store and config",
        "nothing to do inside a sandbox",
    ),
    "commit-graph": (
        "Writing the commit graph changes repository files",
        "nothing to do inside a sandbox",
    ),
    "multi-pack-index": (
        "Writing the multi-pack index changes repository files",
        "nothing to do inside a sandbox",
    ),
    "update-ref": (
        "Direct ref updates rewrite repository state",
        "read refs with `git show-ref` / `git rev-parse`",
    ),
    "update-index": (
        "Updating the index modifies repository state",
        "read the index with `git ls-files -s`",
    ),
    "read-tree": ("read-tree rewrites the index", "read trees with `git ls-tree`"),
    "checkout-index": (
        "checkout-index overwrites working files",
        "read files with `git show :PATH`",
    ),
    "write-tree": (
        "write-tree writes objects into the repository",
        "read the index with `git ls-files -s`",
    ),
    "commit-tree": ("commit-tree creates commits", "leave changes uncommitted"),
    "mktree": ("mktree writes objects into the repository", "read trees with `git ls-tree`"),
    "mktag": ("mktag writes objects into the repository", "read tags with `git tag -l`"),
    "unpack-objects": (
        "Unpacking writes objects into the repository",
        "nothing to do inside a sandbox",
    ),
    "index-pack": ("index-pack writes into the object store", "use `git verify-pack`"),
    "fast-import": ("fast-import writes objects and refs", "nothing to do inside a sandbox"),
    "filter-branch": (
        "filter-branch rewrites repository history",
        "inspect history with `git log`",
    ),
    "filter-repo": ("filter-repo rewrites repository history", "inspect history with `git log`"),
    "replay": ("replay rewrites history onto new bases", "inspect with `git log`"),
    "update-server-info": (
        "update-server-info writes repository files",
        "nothing to do inside a sandbox",
    ),
    "mergetool": (
        "mergetool writes merge results into the working tree and index",
        "inspect conflicts with `git diff`",
    ),
    "citool": ("citool creates commits", "leave changes uncommitted"),
    "gui": ("git gui can commit and change refs", "use `git status` / `git diff`"),
    "send-email": ("send-email sends mail", "write patches with `git format-patch`"),
    "send-pack": ("send-pack pushes to another repository", "propose changes as patches"),
    "receive-pack": ("receive-pack accepts pushes into a repository", "nothing to do here"),
    "upload-pack": ("upload-pack serves a repository to other processes", "nothing to do here"),
    "upload-archive": ("upload-archive serves a repository", "use `git archive`"),
    "daemon": ("git daemon serves repositories over the network", "nothing to do here"),
    "instaweb": ("instaweb starts a web server", "use `git log`"),
    "http-backend": ("http-backend serves repositories", "nothing to do here"),
    "http-fetch": ("http-fetch downloads objects into the repository", "nothing to do here"),
    "http-push": ("http-push publishes to a remote", "propose changes as patches"),
    "imap-send": ("imap-send uploads mail", "write patches with `git format-patch`"),
    "credential": ("Credential commands read or store secrets", "nothing to do here"),
    "credential-store": ("Credential helpers read or store secrets", "nothing to do here"),
    "credential-cache": ("Credential helpers read or store secrets", "nothing to do here"),
    "shell": ("git shell runs restricted commands for remotes", "nothing to do here"),
    "svn": ("git svn rewrites refs and contacts remotes", "nothing to do here"),
    "p4": ("git p4 rewrites refs and contacts remotes", "nothing to do here"),
    "cvsimport": ("cvsimport writes commits", "nothing to do here"),
    "cvsserver": ("cvsserver serves the repository", "nothing to do here"),
    "cvsexportcommit": ("cvsexportcommit writes to another repository", "nothing to do here"),
    "archimport": ("archimport writes commits", "nothing to do here"),
    "quiltimport": ("quiltimport writes commits", "apply patches with `git apply`"),
    "submodule--helper": (
        "Internal submodule plumbing changes repository state",
        "use `git submodule status`",
    ),
    "scalar": ("scalar re-configures the repository", "nothing to do here"),
}

_REDIRECT_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_EXEC_PATH",
)
# Setting these would replace the guard's own per-process git configuration.
_CONFIG_ENV = ("GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_CONFIG_SYSTEM")
# Environment variables whose value git runs as a shell command.
_COMMAND_ENV = (
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER",
    "PAGER",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "EDITOR",
    "VISUAL",
)

# Config keys whose value git runs as a shell command (lower-case glob patterns).
_COMMAND_KEYS = (
    "core.pager",
    "pager.*",
    "core.editor",
    "sequence.editor",
    "core.sshcommand",
    "core.gitproxy",
    "core.askpass",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
    "difftool.*.cmd",
    "mergetool.*.cmd",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "credential.helper",
    "credential.*.helper",
    "gpg.program",
    "gpg.*.program",
    "uploadpack.packobjectshook",
    "core.alternaterefscommand",
    "sendemail.*",
    "web.browser",
    "browser.*.cmd",
    "browser.*.path",
    "man.*.cmd",
    "man.*.path",
    "remote.*.receivepack",
    "remote.*.uploadpack",
    "remote.*.vcs",
    "ssh.variant",
    "instaweb.*",
    "gui.*",
    "guitool.*.cmd",
    "sequence.*",
)
# Config keys that redirect git to other state or disable the guard.
_REDIRECT_KEYS = {
    "core.hookspath": (
        "Overriding core.hooksPath would switch off the guard's git hooks",
        "run the command without the -c core.hooksPath override",
    ),
    "core.worktree": (
        "Overriding core.worktree points git at another working tree",
        "run git from inside the sandbox",
    ),
    "core.bare": (
        "Overriding core.bare changes where git looks for the repository",
        "run git from inside the sandbox",
    ),
    "include.path": (
        "Including another config file could switch off the guard",
        "pass settings with -c KEY=VALUE",
    ),
    "core.fsmonitor": ("core.fsmonitor runs an arbitrary program", "leave core.fsmonitor unset"),
    "core.sharedrepository": (
        "Changing core.sharedRepository rewrites file modes",
        "leave it unset",
    ),
}
_REDIRECT_KEY_GLOBS = (
    ("includeif.*", "Conditional includes could switch off the guard"),
    ("protocol.*", "Re-enabling git transports could reach other repositories"),
    ("extensions.*", "Repository extensions change how git reads the repository"),
)

_GLOBAL_WITH_VALUE = {
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--attr-source",
    "--list-cmds",
}
_GLOBAL_FLAGS = {
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--html-path",
    "--man-path",
    "--info-path",
    "--version",
    "-v",
    "--help",
    "-h",
}
