-- Shared by the Neovim scenarios: loads the plugin from SQ_PLUGIN, records
-- results as JSON in SQ_RESULT and exits with the verdict as status.
local H = { result = { steps = {}, at = {} } }
local t0 = vim.uv.hrtime()

-- Milliseconds since the scenario started (step times, for bench/editors.py).
function H.ms()
  return (vim.uv.hrtime() - t0) / 1e6
end

vim.opt.rtp:prepend(vim.env.SQ_PLUGIN)
vim.opt.swapfile = false
vim.opt.shortmess:append("F")

function H.step(name, value)
  table.insert(H.result.steps, name)
  H.result.at[name] = H.ms()
  if value ~= nil then
    H.result[name] = value
  end
end

function H.wait(ms, pred, what)
  if not vim.wait(ms, pred, 50) then
    error("timed out after " .. ms .. " ms waiting for " .. what, 0)
  end
end

function H.diags(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == "superqode" then
      table.insert(out, { lnum = d.lnum, code = d.code, severity = d.severity, message = d.message })
    end
  end
  table.sort(out, function(a, b) return a.lnum < b.lnum end)
  return out
end

-- Whether one of `notes` (the messages said) contains `text`.
function H.said(notes, text)
  for _, n in ipairs(notes) do
    if n:find(text, 1, true) then return true end
  end
  return false
end

-- Every message said from now on (vim.notify), in a list that is returned;
-- each still goes on to the editor's own vim.notify.
function H.capture_notes()
  local notes = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notes, msg)
    notify(msg, level)
  end
  return notes
end

-- Runs a fix-all command and returns what it told the user (vim.notify),
-- once it has said what it applied; `answer` picks the reply to the server's
-- question before it edits files no window shows (H.asked has the question).
function H.fix_all(cmd, answer)
  local notify, select = vim.notify, vim.ui.select
  local notes = H.capture_notes()
  vim.ui.select = function(items, opts, on_choice)
    H.asked = opts.prompt
    for _, item in ipairs(items) do
      if item.title == answer then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  vim.cmd(cmd)
  H.wait(10000, function() return H.said(notes, "applied") end, "FixAll to say what it did")
  vim.notify, vim.ui.select = notify, select
  return notes
end

function H.session_state(token_prefix)
  for token, s in pairs(require("superqode").sessions) do
    if token:find(token_prefix, 1, true) then
      return s
    end
  end
end

local function finish(code)
  H.result.exit = code
  local f = assert(io.open(vim.env.SQ_RESULT, "w"))
  f:write(vim.json.encode(H.result))
  f:close()
  -- Stop the server cleanly (shutdown + exit) so nothing outlives the editor.
  local clients = vim.lsp.get_clients({ name = "superqode" })
  for _, c in ipairs(clients) do
    c:stop()
  end
  vim.wait(10000, function()
    for _, c in ipairs(clients) do
      if not c:is_stopped() then
        return false
      end
    end
    return true
  end, 50)
  vim.cmd("cquit " .. code)
end

function H.run(body)
  local ok, err = xpcall(body, debug.traceback)
  if not ok then
    H.result.error = tostring(err)
    io.stderr:write("scenario failed: " .. tostring(err) .. "\n")
    finish(1)
  else
    finish(0)
  end
end

return H
