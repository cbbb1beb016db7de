-- Open shop/catalog.py, :SuperQodeRun, diagnostics at the planted lines,
-- apply the F401 quick fix, :write, open the report, list sessions.
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local sq = require("superqode")
  sq.setup({ cmd = { vim.env.SQ_SERVER }, settings = { roles = { "lint_tester" }, fixAllUnsafe = true } })
  local buf = vim.api.nvim_get_current_buf()
  H.wait(15000, function() return sq.client(buf) ~= nil end, "the server to attach")
  H.step("attached")

  vim.cmd("SuperQodeRun")
  H.wait(30000, function() return sq.last_session ~= nil end, "runQE to answer")
  local sid = sq.last_session
  H.step("session", sid)
  H.wait(60000, function()
    local s = H.session_state(sid)
    return s ~= nil and s.done
  end, "the session's progress to end")
  H.step("progress", H.session_state(sid))
  H.wait(15000, function()
    local lines = {}
    for _, d in ipairs(H.diags(buf)) do lines[d.lnum] = true end
    return lines[5] and lines[36]
  end, "superqode diagnostics on lines 6 and 37")
  H.step("diagnostics", H.diags(buf))
  if vim.env.SQ_HTML then
    -- What the window shows, as HTML (the test turns it into a screenshot).
    vim.diagnostic.config({ virtual_text = true, underline = true, signs = true })
    vim.wo.number = true
    vim.api.nvim_win_set_cursor(0, { 6, 0 })
    vim.cmd("redraw")
    vim.fn.writefile(require("tohtml").tohtml(0, { title = "shop/catalog.py - Neovim", number_lines = true }), vim.env.SQ_HTML)
  end

  -- The user puts the cursor on `import os` and picks the quick fix.
  vim.api.nvim_win_set_cursor(0, { 6, 0 })
  local offered = {}
  vim.lsp.buf.code_action({
    context = { only = { "quickfix" } },
    apply = true,
    filter = function(action)
      table.insert(offered, action.title)
      return action.title:find("F401", 1, true) ~= nil
    end,
  })
  H.wait(10000, function()
    return vim.api.nvim_buf_get_lines(buf, 5, 6, false)[1] ~= "import os"
  end, "the quick fix to edit the buffer")
  H.step("offered", offered)
  vim.cmd.write()
  H.step("written")
  H.wait(10000, function()
    for _, d in ipairs(H.diags(buf)) do
      if d.code == "F401" then return false end
    end
    return true
  end, "the fixed finding to disappear")
  H.step("disk_after_fix", table.concat(vim.fn.readfile(vim.api.nvim_buf_get_name(buf)), "\n") .. "\n")

  -- :SuperQodeFixAll! from another file applies what is left (the F841 fix)
  -- to catalog.py, now in no window: the note names it as unsaved; :wall.
  local notes = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notes, msg)
    notify(msg, level)
  end
  vim.cmd.edit("shop/pricing.py")
  local tick = vim.b[buf].changedtick
  vim.cmd("SuperQodeFixAll!")
  H.wait(10000, function() return vim.b[buf].changedtick ~= tick end, "FixAll to edit the buffer")
  H.wait(10000, function()
    for _, n in ipairs(notes) do
      if n:find("applied", 1, true) then return true end
    end
    return false
  end, "FixAll to say what it did")
  H.step("fix_all_notes", notes)
  vim.notify = notify
  vim.cmd("wall")
  vim.api.nvim_set_current_buf(buf)
  H.wait(10000, function() return #H.diags(buf) == 0 end, "all findings to be fixed")
  H.step("fixed_all")

  local listed
  sq.list_sessions(function(sessions) listed = sessions end)
  H.wait(10000, function() return listed ~= nil end, "listSessions")
  H.step("sessions", listed)

  -- :SuperQodeSessions, as a user picking the session and "Show report".
  local prompts = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, { prompt = opts.prompt, items = vim.tbl_map(opts.format_item or tostring, items) })
    on_choice(#prompts == 1 and items[1] or "Show report")
  end
  vim.cmd("SuperQodeSessions")
  H.wait(10000, function()
    return vim.api.nvim_buf_get_name(0):match("%.md$") ~= nil
  end, "the Quality Report to open")
  H.step("picker", prompts)
  H.step("report", vim.api.nvim_buf_get_name(0))
  H.step("report_filetype", vim.bo.filetype)
end)
