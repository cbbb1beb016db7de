-- SuperQode for Neovim 0.10+: starts superqode-ls for project buffers and adds
-- :SuperQodeRun[!] (with role names, or ! to pick them), :SuperQodeCancel, :SuperQodeFixAll, :SuperQodeSessions,
-- :SuperQodeReport, :SuperQodeWorktreeNew and :SuperQodeWorktreeOpen. Findings
-- arrive as ordinary LSP diagnostics (source
-- "superqode"); their fixes are ordinary code actions (vim.lsp.buf.code_action).
-- This module starts the server and talks to it; the rest lives beside it
-- (messages, sessions, worktrees, progress, commands, roles, health) and is
-- exposed here, so require("superqode") stays the one entry point.
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

-- Every message said, in full (:SuperQodeMessages), the last 100; messages.lua owns it.
--- `names` of module `mod`, offered on `require("superqode")` as before the
--- client was split into modules.
local function reexport(mod, names)
  local from = require(mod)
  for _, name in ipairs(names) do
    M[name] = from[name]
  end
  return from
end

local notify = reexport("superqode.messages", { "log", "fit", "notify" }).notify

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

reexport("superqode.sessions", { "run", "running", "cancel", "fix_all_message", "fix_all",
  "report", "describe", "list_sessions" })
reexport("superqode.worktrees", { "open_folder", "new_worktree", "worktree_label",
  "open_worktree", "parse_worktree_args" })

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

local progress = reexport("superqode.progress", { "status" })

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

function M.setup(opts)
  if not has("0.10") then
    notify("needs Neovim 0.10 or newer", vim.log.levels.ERROR)
    return
  end
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  require("superqode.commands").create()
  local group = vim.api.nvim_create_augroup("superqode", { clear = true })
  vim.api.nvim_create_autocmd("LspProgress", { group = group, callback = progress.on_progress })

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