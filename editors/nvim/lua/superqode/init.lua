-- SuperQode for Neovim 0.10+: starts superqode-ls for project buffers and adds
-- :SuperQodeRun[!] (with role names, or ! to pick them), :SuperQodeCancel, :SuperQodeFixAll, :SuperQodeSessions,
-- :SuperQodeReport, :SuperQodeWorktreeNew and :SuperQodeWorktreeOpen. Findings
-- arrive as ordinary LSP diagnostics (source
-- "superqode"); their fixes are ordinary code actions (vim.lsp.buf.code_action).
local M = {}

M.name = "superqode"

local defaults = {
  -- Command that starts the server; nil = look for it (see M.find_server).
  cmd = nil,
  -- Python interpreter that has superqode-ls installed, used when the
  -- superqode-ls script is not on PATH: runs `python -m superqode_ls.server`.
  python = nil,
  filetypes = { "python" },
  root_markers = { "superqode.yaml", "pyproject.toml", "setup.py", ".git" },
  -- The `superqode` settings section: mode, roles, runOnSave, isolation,
  -- trustedFolders, provider (see docs/editors.md).
  settings = {},
  -- Echo $/progress of SuperQode sessions in the command line (one line cut
  -- to its width: never a "Press ENTER" prompt). false: statusline only.
  progress = true,
  -- "auto": vim.lsp.config + vim.lsp.enable on 0.11+, an autocmd with
  -- vim.lsp.start on 0.10. "start" forces the latter.
  lsp_api = "auto",
}

M.options = vim.deepcopy(defaults)
-- token -> { session = id, title, message, done } for every SuperQode progress seen.
M.sessions = {}
M.last_session = nil
-- The last session that ended: { session = id, message = its verdict line }.
M.last_end = nil

-- Every message said, in full (:SuperQodeMessages), the last 100.
M.log = {}
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
function M.fit(text, width)
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
  table.insert(M.log, msg)
  if #M.log > LOG_MAX then
    table.remove(M.log, 1)
  end
  if (opts and opts.full) or not builtin_notify() then
    return vim.notify(msg, level)
  end
  vim.api.nvim_echo({ { M.fit(msg), HL[level] } }, true, {})
end
M.notify = notify

local function has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

--- The command that starts the server, or nil and the reason it was not found.
function M.find_server(opts)
  opts = opts or M.options
  if opts.cmd then
    local exe = type(opts.cmd) == "table" and opts.cmd[1] or opts.cmd
    if vim.fn.executable(exe) == 1 then
      return type(opts.cmd) == "table" and opts.cmd or { opts.cmd }
    end
    return nil, ("cmd %q is not executable"):format(exe)
  end
  if opts.python then
    if vim.fn.executable(opts.python) == 1 then
      return { opts.python, "-m", "superqode_ls.server" }
    end
    return nil, ("python %q is not executable"):format(opts.python)
  end
  local candidates = { "superqode-ls" }
  local venv = vim.env.VIRTUAL_ENV
  if venv and venv ~= "" then
    table.insert(candidates, 1, venv .. "/bin/superqode-ls")
  end
  local root = vim.fs.root(0, { ".venv" })
  if root then
    table.insert(candidates, root .. "/.venv/bin/superqode-ls")
  end
  for _, c in ipairs(candidates) do
    if vim.fn.executable(c) == 1 then
      return { vim.fn.exepath(c) }
    end
  end
  return nil, "superqode-ls not found on PATH, in $VIRTUAL_ENV or in the project's .venv"
end

M.install_hint = "install it with `pip install superqode-ls` (or `pip install -e .` in a checkout) "
  .. "and set `cmd = { '/path/to/venv/bin/superqode-ls' }` or `python = '/path/to/venv/bin/python'` "
  .. "in require('superqode').setup{}"

local function settings_section()
  return { superqode = M.options.settings or {} }
end

--- A running SuperQode client: the one attached to `bufnr`, else any.
function M.client(bufnr)
  local clients = vim.lsp.get_clients({ name = M.name, bufnr = bufnr or 0 })
  if #clients == 0 then
    clients = vim.lsp.get_clients({ name = M.name })
  end
  return clients[1]
end

local function request(client, method, params, handler, bufnr)
  if has("0.11") then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

-- Seconds a command typed while the server starts waits for it.
M.start_wait_s = 60

--- Whether a server for `bufnr` is on its way: the plugin starts one for
--- its filetypes, and Neovim lists a client only once it is initialized
--- (1-3 s after the file opened; longer on a busy machine).
local function starting(bufnr)
  return M.cmd ~= nil and vim.bo[bufnr].buftype == ""
    and vim.tbl_contains(M.options.filetypes or {}, vim.bo[bufnr].filetype)
end

--- Run `fn` once a SuperQode client attaches to `bufnr` (true), or say after
--- M.start_wait_s that none did.
local function when_attached(bufnr, what, fn)
  local done = false
  local id
  id = vim.api.nvim_create_autocmd("LspAttach", {
    buffer = bufnr,
    callback = function(ev)
      local c = vim.lsp.get_client_by_id(ev.data.client_id)
      if done or not c or c.name ~= M.name then
        return
      end
      done = true
      vim.schedule(fn)
      return true -- removes this autocmd
    end,
  })
  vim.defer_fn(function()
    if not done then
      done = true
      pcall(vim.api.nvim_del_autocmd, id)
      notify(what .. ": the server did not start (:checkhealth superqode)", vim.log.levels.WARN)
    end
  end, M.start_wait_s * 1000)
end

--- workspace/executeCommand on the SuperQode server; `on_result(result)` on success.
--- Typed while the server starts, the command waits for it instead of
--- failing ("the server is not running" right after opening a file).
function M.execute(command, arg, on_result, bufnr)
  local client = M.client(bufnr)
  if not client then
    local buf = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
    if starting(buf) then
      notify("the server is starting; the command runs once it is up")
      when_attached(buf, command, function()
        M.execute(command, arg, on_result, buf)
      end)
      return true
    end
    notify("the server is not running for this buffer (:checkhealth superqode)", vim.log.levels.WARN)
    return false
  end
  if type(arg) == "table" and next(arg) == nil then
    arg = vim.empty_dict() -- an empty Lua table would be sent as []
  end
  local params = { command = command, arguments = arg ~= nil and { arg } or {} }
  request(client, "workspace/executeCommand", params, function(err, result)
    if err then
      notify(command .. ": " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    if on_result then
      on_result(result or vim.NIL)
    end
  end, bufnr or 0)
  return true
end

function M.buf_uri(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr or 0)
  if name == "" then
    return nil
  end
  return vim.uri_from_fname(name)
end

--- Start a QE session. opts: { mode = "quick"|"deep", file = bool, roles = {...},
--- worker = the agent roles' worker: an ACP agent's name or "builtin" }.
function M.run(opts)
  opts = opts or {}
  local arg = { mode = opts.mode, roles = opts.roles, worker = opts.worker }
  if opts.file then
    arg.uri = M.buf_uri(0)
  end
  return M.execute("superqode.runQE", arg, function(result)
    M.last_session = result.sessionId
    notify("session " .. tostring(result.sessionId) .. " started")
  end)
end

--- Sessions that are still running, as known from $/progress.
function M.running()
  local out = {}
  for _, s in pairs(M.sessions) do
    if not s.done then
      table.insert(out, s.session)
    end
  end
  return out
end

--- Cancel `session_id`, or every running session of this editor.
function M.cancel(session_id)
  local ids = session_id and { session_id } or M.running()
  if #ids == 0 and M.last_session then
    ids = { M.last_session }
  end
  if #ids == 0 then
    notify("no running session")
    return false
  end
  for _, id in ipairs(ids) do
    M.execute("superqode.cancel", { sessionId = id }, function(result)
      notify(("session %s: %s"):format(id, result.cancelled and "cancelling" or "already finished"))
    end)
  end
  return true
end

--- What Fix All did: the count, the files it edited and what it left out
--- when the server says (an older server sends the count only).
function M.fix_all_message(result)
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
function M.fix_all(all)
  local arg = {}
  if not all then
    arg.uri = M.buf_uri(0)
  end
  local ticks = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    ticks[b] = vim.api.nvim_buf_get_changedtick(b)
  end
  return M.execute("superqode.applyAllFixes", arg, function(result)
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
    local text = M.fix_all_message(result)
    if #hidden > 0 then
      table.sort(hidden)
      text = text .. (" Unsaved, in no window: %s (:wa writes them)."):format(table.concat(hidden, ", "))
    end
    notify(text, nil, { full = true })
  end)
end

--- Open the Quality Report (the server asks Neovim to show it).
function M.report(session_id)
  return M.execute("superqode.showReport", { sessionId = session_id }, function(result)
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
M.describe = describe

--- List sessions; pick one to show its report, cancel or revert it.
--- `on_list(sessions)` (optional) receives the list instead of the picker.
function M.list_sessions(on_list)
  return M.execute("superqode.listSessions", nil, function(result)
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
          M.report(s.sessionId)
        elseif action == "Cancel" then
          M.cancel(s.sessionId)
        elseif action == "Revert" then
          M.execute("superqode.revertSession", { sessionId = s.sessionId }, function(r)
            local verification = val(r.verification)
            notify(("session %s: %ssandbox removed%s"):format(s.sessionId, live and "cancelled, " or "",
              verification and (". " .. verification) or ""))
          end)
        end
      end)
    end)
  end)
end

-- Branch worktrees (docs/worktrees.md). The server creates or finds the folder;
-- the plugin opens it in a new tab whose working directory is the worktree, so
-- it passes showDocument = false (otherwise the folder would also go to the
-- system's file opener through window/showDocument).

--- Open `path` in a new tab with it as the tab's working directory (:tcd).
function M.open_folder(path)
  vim.cmd("tabnew")
  vim.cmd.tcd(vim.fn.fnameescape(path))
end

--- Create a worktree of this buffer's repository and open it in a new tab.
--- opts: { branch = "name", task = "text", new_branch = bool, on_done = fn(result) }.
function M.new_worktree(opts)
  opts = opts or {}
  local arg = { uri = M.buf_uri(0), branch = opts.branch, task = opts.task,
                newBranch = opts.new_branch or nil, showDocument = false }
  return M.execute("superqode.newWorktree", arg, function(result)
    M.open_folder(result.path)
    local branch = val(result.branch) or "detached"
    notify(("worktree %s (%s) at %s"):format(result.name, branch, result.path))
    if opts.on_done then
      opts.on_done(result)
    end
  end)
end

function M.worktree_label(w)
  local branch = val(w.branch) or "detached"
  return ("%s  %s  %s  %s"):format(w.name, branch, tostring(val(w.state) or "?"), w.path)
end

--- Open worktree `name` (folder name, branch or id) in a new tab; without a
--- name, pick one with vim.ui.select. `on_done(result)` runs after opening.
function M.open_worktree(name, on_done)
  local function open(n)
    return M.execute("superqode.openWorktree", { uri = M.buf_uri(0), name = n, showDocument = false },
      function(result)
        M.open_folder(result.path)
        if on_done then
          on_done(result)
        end
      end)
  end
  if name and name ~= "" then
    return open(name)
  end
  return M.execute("superqode.listWorktrees", { uri = M.buf_uri(0) }, function(list)
    if type(list) ~= "table" or #list == 0 then
      notify("no worktrees for this repository (:SuperQodeWorktreeNew makes one)")
      return
    end
    vim.ui.select(list, { prompt = "SuperQode worktrees", format_item = M.worktree_label }, function(w)
      if w then
        open(w.name)
      end
    end)
  end)
end

--- Parse :SuperQodeWorktreeNew arguments: [-b] [branch] | --task text...
function M.parse_worktree_args(fargs)
  local opts = {}
  local i = 1
  while i <= #fargs do
    local a = fargs[i]
    if a == "--task" then
      opts.task = table.concat(vim.list_slice(fargs, i + 1), " ")
      if opts.task == "" then
        return nil, "--task needs a description"
      end
      break
    elseif a == "-b" then
      opts.new_branch = true
    elseif opts.branch == nil and a:sub(1, 1) ~= "-" then
      opts.branch = a
    else
      return nil, "unexpected argument " .. a .. " (usage: [-b] [branch] | --task text)"
    end
    i = i + 1
  end
  if opts.task and opts.branch then
    return nil, "give either a branch name or --task, not both"
  end
  return opts
end

--- A command's result, waited for (at most `timeout_ms`, 2 s by default):
--- for completion, which must answer at once. nil when there is no server
--- or no answer.
function M.execute_sync(command, arg, timeout_ms)
  local client = M.client(0)
  if not client then
    return nil
  end
  if next(arg) == nil then
    arg = vim.empty_dict()
  end
  local params = { command = command, arguments = { arg } }
  local ok, res
  if has("0.11") then
    ok, res = pcall(client.request_sync, client, "workspace/executeCommand", params, timeout_ms or 2000, 0)
  else
    ok, res = pcall(client.request_sync, "workspace/executeCommand", params, timeout_ms or 2000, 0)
  end
  if ok and res and type(res.result) == "table" then
    return res.result
  end
  return nil
end

local function complete_worktrees(lead)
  local out = {}
  for _, w in ipairs(M.execute_sync("superqode.listWorktrees", { uri = M.buf_uri(0) }) or {}) do
    if vim.startswith(w.name, lead) then
      table.insert(out, w.name)
    end
  end
  return out
end

--- One line for a statusline: the running session and its last progress
--- message; when none runs, the last session's end (its verdict line).
function M.status()
  for _, s in pairs(M.sessions) do
    if not s.done then
      return ("SuperQode %s: %s"):format(s.session, s.message or s.title or "running")
    end
  end
  if M.last_end then
    return "SuperQode: " .. M.last_end.message
  end
  return ""
end

local function on_progress(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  if not client or client.name ~= M.name then
    return
  end
  local params = ev.data.params or {}
  local token, value = params.token, params.value or {}
  if type(token) ~= "string" or type(value) ~= "table" then
    return
  end
  local s = M.sessions[token] or { session = token:match("^superqode/(.*)$") or token }
  M.sessions[token] = s
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
    M.last_end = { session = s.session, message = s.message or "ended" }
    local text = s.message == "cancelled" and ("session %s cancelled"):format(s.session) or s.message or "ended"
    if not (s.message or ""):match("^failed") then -- the server says a failure itself
      notify(text)
    end
    vim.api.nvim_exec_autocmds("User", { pattern = "SuperQodeStatus", modeline = false })
    vim.cmd("redrawstatus!")
    return
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "SuperQodeStatus", modeline = false })
  if M.options.progress then
    local text = ("%s: %s"):format(s.title or "SuperQode", s.message or value.kind)
    vim.api.nvim_echo({ { M.fit(text) } }, false, {})
  end
end

-- Hovers as plain text: Neovim renders Markdown hovers, where a masked
-- secret ('****************') turns into emphasis markers and a rule.
local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.textDocument.hover = caps.textDocument.hover or {}
  caps.textDocument.hover.contentFormat = { "plaintext" }
  return caps
end

local LEVEL = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }

-- The server's window/showMessage through notify: Neovim's own handler
-- echoes it whole and a long line waits for Enter while the session goes on
-- unseen. A text of several lines is an answer the user asked for (a
-- finding's details) and is said whole.
local function on_show_message(_, params, _)
  if params and params.message then
    notify(params.message, LEVEL[params.type] or vim.log.levels.INFO, { full = params.message:find("\n") ~= nil })
  end
  return vim.NIL
end

local function server_config(cmd)
  return {
    name = M.name,
    cmd = cmd,
    settings = settings_section(),
    init_options = settings_section(),
    capabilities = capabilities(),
    handlers = { ["window/showMessage"] = on_show_message },
  }
end

local function start_for(bufnr, cmd)
  if vim.bo[bufnr].buftype ~= "" then
    return
  end
  local config = server_config(cmd)
  config.root_dir = vim.fs.root(bufnr, M.options.root_markers)
  vim.lsp.start(config, { bufnr = bufnr })
end

local function user_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd("SuperQodeRun", function(o)
    local roles = require("superqode.roles")
    local run = roles.parse_run_args(o.fargs)
    if o.bang and not run.roles then
      return roles.pick(run) -- :SuperQodeRun! picks the roles first
    end
    M.run(run)
  end, {
    nargs = "*",
    bang = true,
    desc = "SuperQode: run a QE session (args: deep|quick, file, role names; ! = pick the roles)",
    complete = function(lead)
      return require("superqode.roles").complete_run(lead)
    end,
  })
  cmd("SuperQodeCancel", function(o)
    M.cancel(o.args ~= "" and o.args or nil)
  end, { nargs = "?", desc = "SuperQode: cancel the running session" })
  cmd("SuperQodeFixAll", function(o)
    M.fix_all(o.bang)
  end, { bang = true, desc = "SuperQode: apply all verified fixes (! = every file)" })
  cmd("SuperQodeMessages", function()
    -- Everything said, whole, in a scratch buffer (the command line showed
    -- each message cut to its width).
    vim.cmd("botright new")
    local buf = vim.api.nvim_get_current_buf()
    vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = "nofile", "wipe", false
    local lines = {}
    for _, m in ipairs(M.log) do
      vim.list_extend(lines, vim.split(m, "\n", { plain = true }))
    end
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modifiable = false
  end, { desc = "SuperQode: every message said, whole" })
  cmd("SuperQodeSessions", function()
    M.list_sessions()
  end, { desc = "SuperQode: list sessions" })
  cmd("SuperQodeReport", function(o)
    M.report(o.args ~= "" and o.args or nil)
  end, { nargs = "?", desc = "SuperQode: open the Quality Report" })
  cmd("SuperQodeWorktreeNew", function(o)
    local opts, err = M.parse_worktree_args(o.fargs)
    if not opts then
      return notify(err, vim.log.levels.ERROR)
    end
    M.new_worktree(opts)
  end, { nargs = "*", desc = "SuperQode: new worktree in a new tab (args: [-b] [branch] | --task text)" })
  cmd("SuperQodeWorktreeOpen", function(o)
    M.open_worktree(o.args ~= "" and o.args or nil)
  end, { nargs = "?", complete = complete_worktrees, desc = "SuperQode: open a worktree in a new tab" })
end

function M.setup(opts)
  if not has("0.10") then
    notify("needs Neovim 0.10 or newer", vim.log.levels.ERROR)
    return
  end
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  user_commands()
  local group = vim.api.nvim_create_augroup("superqode", { clear = true })
  vim.api.nvim_create_autocmd("LspProgress", { group = group, callback = on_progress })

  local cmd, why = M.find_server(M.options)
  if not cmd then
    M.missing = why
    notify(why .. "; " .. M.install_hint, vim.log.levels.WARN)
    return
  end
  M.missing = nil
  M.cmd = cmd
  if M.options.lsp_api ~= "start" and vim.lsp.config and vim.lsp.enable then
    local config = server_config(cmd)
    config.filetypes = M.options.filetypes
    config.root_markers = M.options.root_markers
    vim.lsp.config(M.name, config)
    vim.lsp.enable(M.name)
    if vim.v.vim_did_enter ~= 1 then
      -- vim.lsp.enable only revisits open buffers after VimEnter; a buffer
      -- loaded before that (nvim -S script.lua file.py) would stay detached.
      for _, buf in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.options.filetypes, vim.bo[buf].filetype) then
          vim.api.nvim_exec_autocmds("FileType", { buffer = buf, modeline = false })
        end
      end
    end
  else
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      pattern = M.options.filetypes,
      callback = function(ev)
        start_for(ev.buf, cmd)
      end,
    })
    -- Buffers opened before setup().
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(M.options.filetypes, vim.bo[buf].filetype) then
        start_for(buf, cmd)
      end
    end
  end
end

return M
