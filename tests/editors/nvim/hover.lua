-- Open shop/storage.py, :SuperQodeRun the security role; at the end the
-- statusline shows the verdict line (redrawn, not waiting for a key) and the
-- end is said once; K on the hard-coded password shows the masked value as
-- it is (plain text, not Markdown emphasis).
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local sq = require("superqode")
  local notes = {}
  vim.notify = function(msg, level)
    table.insert(notes, { msg = msg, level = level })
  end
  local redraws = 0
  vim.api.nvim_create_autocmd("User", {
    pattern = "SuperQodeStatus",
    callback = function() redraws = redraws + 1 end,
  })
  sq.setup({ cmd = { vim.env.SQ_SERVER }, settings = { roles = { "security_tester" } } })
  vim.o.laststatus = 2
  vim.o.statusline = "%!v:lua.require'superqode'.status()"
  local buf = vim.api.nvim_get_current_buf()
  H.wait(15000, function() return sq.client(buf) ~= nil end, "the server to attach")
  H.step("attached")

  vim.cmd("SuperQodeRun")
  H.wait(30000, function() return sq.last_session ~= nil end, "runQE to answer")
  local sid = sq.last_session
  H.wait(90000, function()
    local s = H.session_state(sid)
    return s ~= nil and s.done
  end, "the session's progress to end")
  H.step("session", sid)
  H.step("status_line", sq.status())
  -- What the statusline shows now, evaluated as Neovim draws it.
  H.step("drawn", vim.api.nvim_eval_statusline(vim.o.statusline, { maxwidth = 300 }).str)
  H.step("status_events", redraws)
  H.step("notes", notes)

  H.wait(15000, function()
    for _, d in ipairs(H.diags(buf)) do
      if d.lnum == 10 then return true end
    end
    return false
  end, "the hard-coded password's diagnostic on line 11")
  H.step("diagnostics", H.diags(buf))

  -- K on DB_PASSWORD: the hover float's lines.
  vim.api.nvim_win_set_cursor(0, { 11, 0 })
  local before = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do before[w] = true end
  vim.lsp.buf.hover()
  local float
  H.wait(15000, function()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if not before[w] and vim.api.nvim_win_get_config(w).relative ~= "" then
        float = w
        return true
      end
    end
    return false
  end, "the hover window")
  local fbuf = vim.api.nvim_win_get_buf(float)
  H.step("hover", vim.api.nvim_buf_get_lines(fbuf, 0, -1, false))
  H.step("hover_filetype", vim.bo[fbuf].filetype)
end)
