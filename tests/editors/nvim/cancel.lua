-- :SuperQodeRun on a slow role, :SuperQodeCancel once it is running; the
-- session ends cancelled. Uses the Neovim 0.10 code path (vim.lsp.start).
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local sq = require("superqode")
  sq.setup({ cmd = { vim.env.SQ_SERVER }, lsp_api = "start", settings = {
    roles = { "type_tester" },
    -- This scenario is the user's own run and its cancel: no automatic run beside it.
    lintOnOpen = false, lintOnSave = false, lintOnType = false,
  } })
  local buf = vim.api.nvim_get_current_buf()
  H.wait(15000, function() return sq.client(buf) ~= nil end, "the server to attach")
  H.step("attached")
  vim.cmd("checkhealth superqode")
  H.step("health", vim.api.nvim_buf_get_lines(0, 0, -1, false))
  vim.cmd("tabclose")
  vim.api.nvim_set_current_buf(buf)

  vim.cmd("SuperQodeRun")
  H.wait(30000, function() return sq.last_session ~= nil end, "runQE to answer")
  local sid = sq.last_session
  H.step("session", sid)
  H.wait(30000, function()
    local s = H.session_state(sid)
    return s ~= nil and (s.done or (s.message or ""):find("type_tester started", 1, true) ~= nil)
  end, "type_tester to start")
  H.step("running", vim.deepcopy(H.session_state(sid)))
  H.step("status_line", sq.status())
  vim.cmd("SuperQodeCancel")
  H.wait(30000, function()
    local s = H.session_state(sid)
    return s.done
  end, "the session to end")
  H.step("ended", H.session_state(sid))
  local listed
  sq.list_sessions(function(sessions) listed = sessions end)
  H.wait(10000, function() return listed ~= nil end, "listSessions")
  H.step("sessions", listed)
end)
