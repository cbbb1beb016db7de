-- :SuperQodeRun typed right after the file opened, before the server has
-- answered `initialize` (Neovim lists no client until then): the session
-- runs once the server is up, not "the server is not running".
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local sq = require("superqode")
  local notes = H.capture_notes()
  sq.setup({ cmd = { vim.env.SQ_SERVER }, settings = {
    roles = { "lint_tester" }, lintOnOpen = false, lintOnSave = false, lintOnType = false,
  } })
  local buf = vim.api.nvim_get_current_buf()
  -- No event loop turn since setup(): the client cannot have been initialized.
  H.step("client_before", sq.client(buf) ~= nil)
  vim.cmd("SuperQodeRun")
  H.wait(60000, function() return sq.last_session ~= nil end, "the session to start")
  local sid = sq.last_session
  H.step("session", sid)
  H.wait(60000, function()
    local s = H.session_state(sid)
    return s ~= nil and s.done
  end, "the session to end")
  H.step("ended", H.session_state(sid))
  H.step("notes", notes)
end)
