-- The default settings, no command: open shop/live_planted.py (an unused
-- import and a shell=True call): ruff's F401 (greyed) and bandit's B602 appear
-- by themselves; then a second file opened with the server running; a save
-- that adds a third problem (`import sys`) shows it; a typed, unsaved line
-- gets its own after the pause. Each step's time (H.result.at, ms) is what
-- bench/editors.py reads. SQ_LSP_CMD (bench only): another server to time
-- the same way (`ruff server`), SQ_LSP_INIT its initializationOptions (JSON),
-- SQ_UNUSED / SQ_SHELL its codes for the two problems.
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local buf = vim.api.nvim_get_current_buf()
  local other = vim.env.SQ_LSP_CMD
  local client
  if other then
    local init = vim.env.SQ_LSP_INIT and vim.json.decode(vim.env.SQ_LSP_INIT) or nil
    local id = vim.lsp.start({ name = "other", cmd = vim.split(other, " "), root_dir = vim.fn.getcwd(),
                               init_options = init })
    client = function(b) return vim.lsp.buf_is_attached(b, id) and id or nil end
    vim.api.nvim_create_autocmd("BufReadPost", { callback = function(a) vim.lsp.buf_attach_client(a.buf, id) end })
  else
    local sq = require("superqode")
    sq.setup({ cmd = { vim.env.SQ_SERVER } })
    client = sq.client
  end
  H.wait(15000, function() return client(buf) ~= nil end, "the server to attach")
  H.step("attached")
  local unused = vim.env.SQ_UNUSED or "F401"
  local shell = vim.env.SQ_SHELL or "B602"

  local function count(b, code)
    local n = 0
    for _, d in ipairs(vim.diagnostic.get(b)) do
      if d.code == code then n = n + 1 end
    end
    return n
  end
  local function both(b) return count(b, unused) >= 1 and count(b, shell) >= 1 end

  H.wait(60000, function() return both(buf) end, unused .. " and " .. shell .. " without a command")
  H.step("on_open", H.diags(buf))
  if not other then
    local greyed = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.source == "superqode" and d._tags and d._tags.unnecessary then table.insert(greyed, d.code) end
    end
    H.step("greyed", greyed)
    H.step("no_command_ran", require("superqode").last_session == nil)
  end

  -- A second file, opened while the server runs (what every open after the first costs).
  H.step("open_second")
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.SQ_SECOND))
  local second = vim.api.nvim_get_current_buf()
  H.wait(60000, function() return both(second) end, "the second file's findings")
  H.step("on_open_second", H.diags(second))

  -- A save that adds a third problem: an unused `import sys` above the rest.
  vim.api.nvim_buf_set_lines(second, 0, 0, false, { "import sys" })
  H.step("save")
  vim.cmd("write")
  H.wait(60000, function() return count(second, unused) >= 2 end, "the saved third problem")
  H.step("after_save", H.diags(second))

  -- Typed, not saved: one more unused import.
  vim.api.nvim_buf_set_lines(second, 0, 0, false, { "import json" })
  H.step("type")
  H.wait(60000, function() return count(second, unused) >= 3 end, "the typed problem")
  H.step("after_typing", H.diags(second))
  H.step("modified", vim.bo[second].modified)

  if vim.env.SQ_RUN_QE and not other then
    -- :SuperQodeRun file: the run's first finding in this buffer, and its end.
    local sq = require("superqode")
    -- The folder is not trusted yet: the project's quick roles include
    -- unit_tester, so the server asks; the answer is "Trust folder".
    vim.ui.select = function(items, _, on_choice)
      for i, item in ipairs(items) do
        if (type(item) == "table" and item.title or item) == "Trust folder" then return on_choice(item, i) end
      end
      on_choice(nil)
    end
    H.step("run_qe")
    vim.cmd("SuperQodeRun file")
    H.wait(20000, function() return sq.last_session ~= nil end, "the session to start")
    local sid = sq.last_session
    H.wait(120000, function()
      for _, d in ipairs(vim.diagnostic.get(second)) do
        local lsp = d.user_data and d.user_data.lsp
        if lsp and lsp.data and lsp.data.sessionId == sid then return true end
      end
      return false
    end, "a finding of the run")
    H.step("run_first_diagnostic")
    H.wait(300000, function() return sq.last_end ~= nil and sq.last_end.session == sid end, "the end of the run")
    H.step("run_end", sq.last_end.message)
  end
end)
