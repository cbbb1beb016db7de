-- The :SuperQode* user commands, created by require("superqode").setup().
local C = {}

local function sq()
  return require("superqode")
end
local notify = require("superqode.messages").notify
local worktrees = require("superqode.worktrees")

--- (Re)define every :SuperQode* command.
function C.create()
  local cmd = vim.api.nvim_create_user_command
  cmd("SuperQodeRun", function(o)
    local roles = require("superqode.roles")
    local run = roles.parse_run_args(o.fargs)
    if o.bang and not run.roles then
      return roles.pick(run) -- :SuperQodeRun! picks the roles first
    end
    sq().run(run)
  end, {
    nargs = "*",
    bang = true,
    desc = "SuperQode: run a QE session (args: deep|quick, file, role names; ! = pick the roles)",
    complete = function(lead)
      return require("superqode.roles").complete_run(lead)
    end,
  })
  cmd("SuperQodeCancel", function(o)
    sq().cancel(o.args ~= "" and o.args or nil)
  end, { nargs = "?", desc = "SuperQode: cancel the running session" })
  cmd("SuperQodeFixAll", function(o)
    sq().fix_all(o.bang)
  end, { bang = true, desc = "SuperQode: apply all verified fixes (! = every file)" })
  cmd("SuperQodeMessages", function()
    -- Everything said, whole, in a scratch buffer (the command line showed
    -- each message cut to its width).
    vim.cmd("botright new")
    local buf = vim.api.nvim_get_current_buf()
    vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = "nofile", "wipe", false
    local lines = {}
    for _, m in ipairs(sq().log) do
      vim.list_extend(lines, vim.split(m, "\n", { plain = true }))
    end
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modifiable = false
  end, { desc = "SuperQode: every message said, whole" })
  cmd("SuperQodeSessions", function()
    sq().list_sessions()
  end, { desc = "SuperQode: list sessions" })
  cmd("SuperQodeReport", function(o)
    sq().report(o.args ~= "" and o.args or nil)
  end, { nargs = "?", desc = "SuperQode: open the Quality Report" })
  cmd("SuperQodeWorktreeNew", function(o)
    local opts, err = sq().parse_worktree_args(o.fargs)
    if not opts then
      return notify(err, vim.log.levels.ERROR)
    end
    sq().new_worktree(opts)
  end, { nargs = "*", desc = "SuperQode: new worktree in a new tab (args: [-b] [branch] | --task text)" })
  cmd("SuperQodeWorktreeOpen", function(o)
    sq().open_worktree(o.args ~= "" and o.args or nil)
  end, { nargs = "?", complete = worktrees.complete, desc = "SuperQode: open a worktree in a new tab" })
end

return C
