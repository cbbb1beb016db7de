-- fixAllUnsafe = true: :SuperQodeFixAll on shop/catalog.py takes ruff's unsafe
-- F841 fix along with the safe F401 one and skips nothing.
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local sq = require("superqode")
  sq.setup({ cmd = { vim.env.SQ_SERVER }, settings = { roles = { "lint_tester" }, fixAllUnsafe = true } })
  local buf = vim.api.nvim_get_current_buf()
  H.wait(15000, function() return sq.client(buf) ~= nil end, "the server to attach")
  vim.cmd("SuperQodeRun")
  H.wait(30000, function() return sq.last_session ~= nil end, "runQE to answer")
  local sid = sq.last_session
  H.wait(60000, function()
    local s = H.session_state(sid)
    return s ~= nil and s.done
  end, "the session's progress to end")
  H.wait(15000, function() return #H.diags(buf) == 2 end, "both findings")
  H.step("diagnostics", H.diags(buf))

  H.step("fix_all_notes", H.fix_all("SuperQodeFixAll"))
  vim.cmd.write()
  H.wait(10000, function() return #H.diags(buf) == 0 end, "all findings to be fixed")
  H.step("fixed_all")
end)
