-- QE sessions from the editor: run, cancel, Fix All, the Quality Report and
-- the session picker (:SuperQodeRun, :SuperQodeCancel, :SuperQodeFixAll,
-- :SuperQodeReport, :SuperQodeSessions). Exposed through require("superqode").
local S = {}

local function sq()
  return require("superqode")
end
local notify = require("superqode.messages").notify

--- Start a QE session. opts: { mode = "quick"|"deep", file = bool, roles = {...},
--- worker = the agent roles' worker: an ACP agent's name or "builtin" }.
function S.run(opts)
  opts = opts or {}
  local arg = { mode = opts.mode, roles = opts.roles, worker = opts.worker }
  if opts.file then
    arg.uri = sq().buf_uri(0)
  end
  return sq().execute("superqode.runQE", arg, function(result)
    sq().last_session = result.sessionId
    notify("session " .. tostring(result.sessionId) .. " started")
  end)
end

--- Sessions that are still running, as known from $/progress.
function S.running()
  local out = {}
  for _, s in pairs(sq().sessions) do
    if not s.done then
      table.insert(out, s.session)
    end
  end
  return out
end

--- Cancel `session_id`, or every running session of this editor.
function S.cancel(session_id)
  local ids = session_id and { session_id } or sq().running()
  if #ids == 0 and sq().last_session then
    ids = { sq().last_session }
  end
  if #ids == 0 then
    notify("no running session")
    return false
  end
  for _, id in ipairs(ids) do
    sq().execute("superqode.cancel", { sessionId = id }, function(result)
      notify(("session %s: %s"):format(id, result.cancelled and "cancelling" or "already finished"))
    end)
  end
  return true
end

--- What Fix All did: the count, the files it edited and what it left out
--- when the server says (an older server sends the count only).
function S.fix_all_message(result)
  if result.cancelled then
    return "Fix All cancelled; nothing changed."
  end
  local n = result.applied or 0
  local text
  if type(result.counts) == "string" then
    -- The server's words for the count: the session's end and the report say the same.
    text = ("applied %d fix%s (%s)"):format(n, n == 1 and "" or "es", result.counts)
  else
    text = n == 1 and "applied 1 verified fix" or ("applied %d verified fixes"):format(n)
  end
  local files = type(result.relFiles) == "table" and result.relFiles or result.files
  if type(files) == "table" and #files > 0 then
    text = text .. " in " .. table.concat(vim.tbl_map(function(f)
      return type(result.relFiles) == "table" and f or vim.fn.fnamemodify(f, ":~:.")
    end, files), ", ")
  end
  text = text .. "."
  if type(result.skipped) == "table" and #result.skipped > 0 then
    local parts = {}
    for _, sk in ipairs(result.skipped) do
      table.insert(parts, ("%s (%s)"):format(tostring(sk.rule or sk.findingId or "?"), tostring(sk.reason)))
    end
    text = text .. (" Skipped %d: %s."):format(#result.skipped, table.concat(parts, "; "))
  end
  return text
end

--- Apply every verified fix: in the current file, or everywhere with `all`.
function S.fix_all(all)
  local arg = {}
  if not all then
    arg.uri = sq().buf_uri(0)
  end
  local ticks = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    ticks[b] = vim.api.nvim_buf_get_changedtick(b)
  end
  return sq().execute("superqode.applyAllFixes", arg, function(result)
    -- The edits are in before the answer comes (workspace/applyEdit first).
    -- Neovim leaves an edited buffer that no window shows unsaved: name them,
    -- or they are easy to lose on :qa!.
    local hidden = {}
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].modified and #vim.fn.win_findbuf(b) == 0
        and ticks[b] ~= vim.api.nvim_buf_get_changedtick(b) then
        table.insert(hidden, vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":~:."))
      end
    end
    local text = sq().fix_all_message(result)
    if #hidden > 0 then
      table.sort(hidden)
      text = text .. (" Unsaved, in no window: %s (:wa writes them)."):format(table.concat(hidden, ", "))
    end
    notify(text, nil, { full = true })
  end)
end

--- Open the Quality Report (the server asks Neovim to show it).
function S.report(session_id)
  return sq().execute("superqode.showReport", { sessionId = session_id }, function(result)
    if result.shown == false and result.uri then
      vim.cmd.edit(vim.fn.fnameescape(vim.uri_to_fname(result.uri)))
    end
    -- A Markdown buffer, whatever opened it: rendered by the markdown
    -- filetype (treesitter/conceal), never left as plain text.
    if vim.api.nvim_buf_get_name(0):match("%.md$") and vim.bo.filetype ~= "markdown" then
      vim.bo.filetype = "markdown"
    end
  end)
end

-- JSON null arrives as vim.NIL: nil for it.
local function val(x)
  if x == nil or x == vim.NIL then
    return nil
  end
  return x
end

local function describe(s)
  local parts = { tostring(s.sessionId), tostring(val(s.state) or "?") }
  if val(s.mode) then
    table.insert(parts, tostring(s.mode))
  end
  if type(s.findings) == "number" then
    table.insert(parts, ("%d finding(s)"):format(s.findings))
  end
  if val(s.verdict) then
    table.insert(parts, tostring(s.verdict))
  end
  if val(s.onDisk) then
    table.insert(parts, "left on disk")
  end
  return table.concat(parts, "  ")
end
S.describe = describe
S.val = val

--- List sessions; pick one to show its report, cancel or revert it.
--- `on_list(sessions)` (optional) receives the list instead of the picker.
function S.list_sessions(on_list)
  return sq().execute("superqode.listSessions", nil, function(result)
    local sessions = result.sessions or {}
    if on_list then
      return on_list(sessions)
    end
    if #sessions == 0 then
      notify("no sessions")
      return
    end
    vim.ui.select(sessions, { prompt = "SuperQode sessions", format_item = describe }, function(s)
      if not s then
        return
      end
      -- A finished session removed its sandbox at its end: only a live one or
      -- one left on disk has anything to cancel or revert.
      local live = s.state == "running" or s.state == "starting"
      local actions = { "Show report" }
      if live then
        table.insert(actions, "Cancel")
      end
      if live or val(s.onDisk) then
        table.insert(actions, "Revert")
      end
      vim.ui.select(actions, { prompt = s.sessionId }, function(action)
        if action == "Show report" then
          sq().report(s.sessionId)
        elseif action == "Cancel" then
          sq().cancel(s.sessionId)
        elseif action == "Revert" then
          sq().execute("superqode.revertSession", { sessionId = s.sessionId }, function(r)
            local verification = val(r.verification)
            notify(("session %s: %ssandbox removed%s"):format(s.sessionId, live and "cancelled, " or "",
              verification and (". " .. verification) or ""))
          end)
        end
      end)
    end)
  end)
end

return S
