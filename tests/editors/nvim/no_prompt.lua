-- Driven from tmux like a user (tests/editors/test_nvim_tmux.py): the plugin
-- with a statusline, a file marker when the server attached and one when the
-- session ended; :SuperQodeRun is typed by the test, never called from here,
-- so every message goes through Neovim's real screen.
dofile(vim.env.SQ_HARNESS)
local sq = require("superqode")
sq.setup({ cmd = { vim.env.SQ_SERVER }, settings = { roles = { "lint_tester", "security_tester" } } })
vim.o.laststatus = 2
vim.o.statusline = "%f %{v:lua.require'superqode'.status()}"

local function mark(name, data)
  local f = assert(io.open(vim.env.SQ_RESULT .. "." .. name, "w"))
  f:write(vim.json.encode(data or {}))
  f:close()
end

vim.api.nvim_create_autocmd("LspAttach", {
  callback = function()
    if sq.client(0) then
      mark("ready", { echospace = vim.v.echospace, columns = vim.o.columns })
    end
  end,
})
vim.api.nvim_create_autocmd("User", {
  pattern = "SuperQodeStatus",
  callback = function()
    if sq.last_end then
      -- After the end was said and the statusline redrawn.
      vim.schedule(function()
        mark("done", { message = sq.last_end.message, log = sq.log, mode = vim.fn.mode() })
      end)
    end
  end,
})
