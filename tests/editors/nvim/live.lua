-- Open shop/live_planted.py (an unused import and a shell=True call) with the
-- default settings: its diagnostics appear without any command (ruff's F401
-- greyed, bandit's B602); a typed `import sys` gets its own after the pause.
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local sq = require("superqode")
  sq.setup({ cmd = { vim.env.SQ_SERVER } })
  local buf = vim.api.nvim_get_current_buf()
  H.wait(15000, function() return sq.client(buf) ~= nil end, "the server to attach")
  H.step("attached")

  local function codes()
    local out = {}
    for _, d in ipairs(H.diags(buf)) do out[d.code] = (out[d.code] or 0) + 1 end
    return out
  end
  H.wait(60000, function()
    local c = codes()
    return c.F401 ~= nil and c.B602 ~= nil
  end, "F401 and B602 without a command")
  H.step("on_open", H.diags(buf))
  local greyed = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == "superqode" and d._tags and d._tags.unnecessary then table.insert(greyed, d.code) end
  end
  H.step("greyed", greyed)
  H.step("no_command_ran", sq.last_session == nil)

  -- Typed (not saved): an `import sys` line at the top.
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "import sys" })
  H.wait(60000, function() return (codes().F401 or 0) >= 2 end, "F401 for the typed import")
  H.step("after_typing", H.diags(buf))
  H.step("modified", vim.bo[buf].modified)
end)
