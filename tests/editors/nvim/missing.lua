-- No server where the user pointed: setup() says what to do, :checkhealth
-- reports it, commands warn instead of failing.
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local notes = {}
  vim.notify = function(msg, level) table.insert(notes, { msg = msg, level = level }) end
  local sq = require("superqode")
  sq.setup({ cmd = { vim.env.SQ_MISSING } })
  vim.cmd("SuperQodeRun")
  H.step("notes", notes)
  H.step("clients", #vim.lsp.get_clients({ name = "superqode" }))
  vim.cmd("checkhealth superqode")
  H.step("health", vim.api.nvim_buf_get_lines(0, 0, -1, false))
end)
