-- Branch worktrees (docs/worktrees.md): :SuperQodeWorktreeNew and
-- :SuperQodeWorktreeOpen, exposed through require("superqode").
-- The server creates or finds the folder;
-- the plugin opens it in a new tab whose working directory is the worktree, so
-- it passes showDocument = false (otherwise the folder would also go to the
-- system's file opener through window/showDocument).
local W = {}

local function sq()
  return require("superqode")
end
local notify = require("superqode.messages").notify
local val = require("superqode.sessions").val

--- Open `path` in a new tab with it as the tab's working directory (:tcd).
function W.open_folder(path)
  vim.cmd("tabnew")
  vim.cmd.tcd(vim.fn.fnameescape(path))
end

--- Create a worktree of this buffer's repository and open it in a new tab.
--- opts: { branch = "name", task = "text", new_branch = bool, on_done = fn(result) }.
function W.new_worktree(opts)
  opts = opts or {}
  local arg = { uri = sq().buf_uri(0), branch = opts.branch, task = opts.task,
                newBranch = opts.new_branch or nil, showDocument = false }
  return sq().execute("superqode.newWorktree", arg, function(result)
    sq().open_folder(result.path)
    local branch = val(result.branch) or "detached"
    notify(("worktree %s (%s) at %s"):format(result.name, branch, result.path))
    if opts.on_done then
      opts.on_done(result)
    end
  end)
end

function W.worktree_label(w)
  local branch = val(w.branch) or "detached"
  return ("%s  %s  %s  %s"):format(w.name, branch, tostring(val(w.state) or "?"), w.path)
end

--- Open worktree `name` (folder name, branch or id) in a new tab; without a
--- name, pick one with vim.ui.select. `on_done(result)` runs after opening.
function W.open_worktree(name, on_done)
  local function open(n)
    return sq().execute("superqode.openWorktree", { uri = sq().buf_uri(0), name = n, showDocument = false },
      function(result)
        sq().open_folder(result.path)
        if on_done then
          on_done(result)
        end
      end)
  end
  if name and name ~= "" then
    return open(name)
  end
  return sq().execute("superqode.listWorktrees", { uri = sq().buf_uri(0) }, function(list)
    if type(list) ~= "table" or #list == 0 then
      notify("no worktrees for this repository (:SuperQodeWorktreeNew makes one)")
      return
    end
    vim.ui.select(list, { prompt = "SuperQode worktrees", format_item = sq().worktree_label }, function(w)
      if w then
        open(w.name)
      end
    end)
  end)
end

--- Parse :SuperQodeWorktreeNew arguments: [-b] [branch] | --task text...
function W.parse_worktree_args(fargs)
  local opts = {}
  local i = 1
  while i <= #fargs do
    local a = fargs[i]
    if a == "--task" then
      opts.task = table.concat(vim.list_slice(fargs, i + 1), " ")
      if opts.task == "" then
        return nil, "--task needs a description"
      end
      break
    elseif a == "-b" then
      opts.new_branch = true
    elseif opts.branch == nil and a:sub(1, 1) ~= "-" then
      opts.branch = a
    else
      return nil, "unexpected argument " .. a .. " (usage: [-b] [branch] | --task text)"
    end
    i = i + 1
  end
  if opts.task and opts.branch then
    return nil, "give either a branch name or --task, not both"
  end
  return opts
end

--- Worktree names for <Tab> after :SuperQodeWorktreeOpen.
function W.complete(lead)
  local out = {}
  for _, w in ipairs(sq().execute_sync("superqode.listWorktrees", { uri = sq().buf_uri(0) }) or {}) do
    if vim.startswith(w.name, lead) then
      table.insert(out, w.name)
    end
  end
  return out
end

return W
