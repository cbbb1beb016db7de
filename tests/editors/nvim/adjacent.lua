-- shop/storage.py with an unused import planted right above a finding twice
-- (above `import subprocess`, B404, and above the hard-coded password, B105):
-- each F401 quick fix removes its line, and every other finding stays shown,
-- on its moved line.
local H = dofile(vim.env.SQ_HARNESS)

local function fix_f401(buf, name)
  local line
  for i, text in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if text == "import " .. name then line = i end
  end
  assert(line, "no line `import " .. name .. "`")
  vim.api.nvim_win_set_cursor(0, { line, 0 })
  vim.lsp.buf.code_action({
    context = { only = { "quickfix" } },
    apply = true,
    filter = function(action)
      return action.title:find("(F401): Remove unused import: `" .. name .. "`", 1, true) ~= nil
    end,
  })
  H.wait(10000, function()
    return vim.api.nvim_buf_get_lines(buf, line - 1, line, false)[1] ~= "import " .. name
  end, "the F401 fix of " .. name)
  vim.cmd.write()
  H.wait(10000, function()
    for _, d in ipairs(H.diags(buf)) do
      if d.code == "F401" and d.message:find("`" .. name .. "`", 1, true) then return false end
    end
    return true
  end, "the fixed F401 of " .. name .. " to go")
  vim.wait(500)  -- a wrongly dropped neighbour would be gone by now
end

H.run(function()
  local sq = require("superqode")
  sq.setup({ cmd = { vim.env.SQ_SERVER }, settings = { roles = { "lint_tester", "security_tester" } } })
  local buf = vim.api.nvim_get_current_buf()
  H.wait(15000, function() return sq.client(buf) ~= nil end, "the server to attach")
  vim.cmd("SuperQodeRun")
  H.wait(30000, function() return sq.last_session ~= nil end, "runQE to answer")
  local sid = sq.last_session
  H.wait(90000, function()
    local s = H.session_state(sid)
    return s ~= nil and s.done
  end, "the session's progress to end")
  H.wait(15000, function()
    local n = 0
    for _, d in ipairs(H.diags(buf)) do
      if d.code == "F401" then n = n + 1 end
    end
    return n == 2
  end, "both planted F401 findings")
  vim.wait(500)
  H.step("before", H.diags(buf))
  fix_f401(buf, "sys")
  H.step("after_sys", H.diags(buf))
  fix_f401(buf, "os")
  H.step("after_os", H.diags(buf))
end)
