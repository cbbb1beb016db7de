-- The role picker: :SuperQodeRun completes role names from the server;
-- :SuperQodeRun! ticks them in vim.ui.select (security on, lint off, then
-- "Run"); :SuperQodeRun with a role name runs that role; an unknown name is
-- one line from the server.
local H = dofile(vim.env.SQ_HARNESS)

local function wait_end(sq, what)
  H.wait(30000, function() return sq.last_session ~= nil end, "runQE to answer (" .. what .. ")")
  local sid = sq.last_session
  H.wait(90000, function()
    local s = H.session_state(sid)
    return s ~= nil and s.done
  end, what .. " to end")
  return sid
end

H.run(function()
  local sq = require("superqode")
  local notes = H.capture_notes()
  sq.setup({ cmd = { vim.env.SQ_SERVER }, settings = {
    roles = { "lint_tester" }, trustedFolders = { vim.fn.getcwd() },
    lintOnOpen = false, lintOnSave = false, lintOnType = false,
  } })
  local buf = vim.api.nvim_get_current_buf()
  H.wait(15000, function() return sq.client(buf) ~= nil end, "the server to attach")
  H.step("attached")

  H.step("complete_all", vim.fn.getcompletion("SuperQodeRun ", "cmdline"))
  H.step("complete_sec", vim.fn.getcompletion("SuperQodeRun deep sec", "cmdline"))

  -- :SuperQodeRun! : tick security_tester, untick lint_tester, the next
  -- worker (builtin -> the ACP agent ghost), tick agent_unit_tester, run.
  local picks = { "security_tester", "lint_tester", "worker", "agent_unit_tester", "run" }
  local shown = {}
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for _, item in ipairs(items) do
      table.insert(labels, opts.format_item(item))
    end
    table.insert(shown, { prompt = opts.prompt, labels = labels })
    local want = table.remove(picks, 1)
    for _, item in ipairs(items) do
      if (want == "run" and item.run) or (want == "worker" and item.worker)
          or (item.role and item.role.name == want) then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  vim.cmd("SuperQodeRun!")
  local picked = wait_end(sq, "the picked run")
  vim.ui.select = select
  H.step("picked_session", picked)
  H.step("picker", shown)

  sq.last_session = nil
  vim.cmd("SuperQodeRun lint_tester")
  H.step("named_session", wait_end(sq, "the named run"))

  vim.cmd("SuperQodeRun no_such_role")
  H.wait(10000, function() return H.said(notes, "no_such_role") end, "the unknown role to be said")
  H.step("notes", notes)
end)
