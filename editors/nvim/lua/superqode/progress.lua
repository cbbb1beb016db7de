-- $/progress of SuperQode sessions: the statusline line (require("superqode").status())
-- and the command-line echo, and the end of a session said once.
local P = {}

local function sq()
  return require("superqode")
end
local notify = require("superqode.messages").notify

--- One line for a statusline: the running session and its last progress
--- message; when none runs, the last session's end (its verdict line).
function P.status()
  for _, s in pairs(sq().sessions) do
    if not s.done then
      return ("SuperQode %s: %s"):format(s.session, s.message or s.title or "running")
    end
  end
  if sq().last_end then
    return "SuperQode: " .. sq().last_end.message
  end
  return ""
end

--- The LspProgress autocmd's callback.
function P.on_progress(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  if not client or client.name ~= sq().name then
    return
  end
  local params = ev.data.params or {}
  local token, value = params.token, params.value or {}
  if type(token) ~= "string" or type(value) ~= "table" then
    return
  end
  local s = sq().sessions[token] or { session = token:match("^superqode/(.*)$") or token }
  sq().sessions[token] = s
  if value.kind == "begin" then
    s.title, s.done = value.title, false
  elseif value.kind == "end" then
    s.done = true
  end
  s.message = value.message or s.message
  s.kind = value.kind
  if value.kind == "end" then
    -- The end is said once, where it stays (:messages), and every statusline
    -- is redrawn now: nothing else would redraw it until the next keypress.
    sq().last_end = { session = s.session, message = s.message or "ended" }
    local text = s.message == "cancelled" and ("session %s cancelled"):format(s.session) or s.message or "ended"
    if not (s.message or ""):match("^failed") then -- the server says a failure itself
      notify(text)
    end
    vim.api.nvim_exec_autocmds("User", { pattern = "SuperQodeStatus", modeline = false })
    vim.cmd("redrawstatus!")
    return
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "SuperQodeStatus", modeline = false })
  if sq().options.progress then
    local text = ("%s: %s"):format(s.title or "SuperQode", s.message or value.kind)
    vim.api.nvim_echo({ { sq().fit(text) } }, false, {})
  end
end

return P
