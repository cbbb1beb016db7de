-- How SuperQode speaks: one command-line line that never waits for Enter,
-- every message kept whole for :SuperQodeMessages.
local N = {}

-- Every message said, in full (:SuperQodeMessages), the last 100 (require("superqode").log).
N.log = {}
local LOG_MAX = 100

--- vim.notify as Neovim ships it (an echo that waits for Enter when the text
--- is longer than the command line), as opposed to a notification plugin's.
local function builtin_notify()
  local info = debug.getinfo(vim.notify, "S")
  return info ~= nil and (info.source or ""):find("vim/_editor.lua", 1, true) ~= nil
end

--- `text` on one line that fits the command line as it is now
--- (v:echospace: the columns left beside ruler and showcmd), so an echo never
--- wraps into a "Press ENTER" prompt, whatever the terminal width.
function N.fit(text, width)
  text = tostring(text):gsub("%s*\n%s*", " | ")
  width = math.max(width or vim.v.echospace, 10)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local n = vim.fn.strchars(text)
  local cut = vim.fn.strcharpart(text, 0, width - 1)
  while n > 0 and vim.fn.strdisplaywidth(cut) > width - 1 do
    n = n - 1
    cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1)
  end
  return cut .. "…"
end

local HL = { [vim.log.levels.ERROR] = "ErrorMsg", [vim.log.levels.WARN] = "WarningMsg" }

--- Say `msg`. Never blocks: with Neovim's own vim.notify the command line
--- gets one line that fits (the whole text stays in :SuperQodeMessages);
--- a notification plugin (nvim-notify, fidget, ...) gets the whole text.
--- `opts.full`: an answer to a command the user just gave, said whole even
--- when that takes more than one line.
local function notify(msg, level, opts)
  level = level or vim.log.levels.INFO
  if msg:sub(1, 11) ~= "SuperQode: " then -- the server's own lines already say who speaks
    msg = "SuperQode: " .. msg
  end
  table.insert(N.log, msg)
  if #N.log > LOG_MAX then
    table.remove(N.log, 1)
  end
  if (opts and opts.full) or not builtin_notify() then
    return vim.notify(msg, level)
  end
  vim.api.nvim_echo({ { N.fit(msg), HL[level] } }, true, {})
end
N.notify = notify

return N
