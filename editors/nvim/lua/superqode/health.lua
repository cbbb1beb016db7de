-- :checkhealth superqode
local M = {}

function M.check()
  local health = vim.health
  local sq = require("superqode")
  health.start("superqode")

  if vim.fn.has("nvim-0.10") == 1 then
    local v = vim.version()
    health.ok(("Neovim %d.%d.%d"):format(v.major, v.minor, v.patch))
  else
    health.error("Neovim 0.10 or newer is required")
  end
  if vim.fn.has("nvim-0.11") ~= 1 then
    health.info("Neovim 0.10: the server is started with vim.lsp.start from a FileType autocmd")
  end

  if vim.fn.executable("git") == 1 then
    health.ok("git found: " .. vim.fn.exepath("git"))
  else
    health.warn("git not found: sessions fall back to directory copies")
  end

  local cmd, why = sq.find_server(sq.options)
  if not cmd then
    health.error(why, { sq.install_hint })
    return
  end
  local out = vim.system(vim.list_extend(vim.deepcopy(cmd), { "--help" }), { text = true }):wait(20000)
  if out.code == 0 then
    health.ok("server: " .. table.concat(cmd, " "))
  else
    health.error(
      ("server command fails (exit %s): %s"):format(tostring(out.code), table.concat(cmd, " ")),
      { vim.trim(out.stderr or ""), sq.install_hint }
    )
  end

  local client = sq.client(0)
  if client then
    health.ok(("attached: client %d, root %s"):format(client.id, client.root_dir or client.config.root_dir or "(none)"))
  else
    health.info(("not attached to the current buffer (filetypes: %s; root markers: %s)"):format(
      table.concat(sq.options.filetypes or {}, ", "), table.concat(sq.options.root_markers or {}, ", ")))
  end
  -- Neovim 0.11 turned virtual text off: findings then show as signs and
  -- underlines only, and a new user sees no message at all.
  local vt = vim.diagnostic.config().virtual_text
  if vt then
    health.ok("virtual text is on: a finding's message shows at the end of its line")
  else
    health.warn("virtual text is off (the Neovim 0.11+ default): findings show as signs and underlines only", {
      "turn it on: vim.diagnostic.config({ virtual_text = true })",
      "or read a line's findings with vim.diagnostic.open_float() (<C-w>d) and hover (K)",
    })
  end
  if sq.options.progress then
    health.ok("progress: one line in the command line, cut to its width (never a Press ENTER prompt); "
      .. "statusline: require('superqode').status(); everything said: :SuperQodeMessages")
  else
    health.info("progress in the command line is off (progress = false): statusline only")
  end

  local running = sq.running()
  if #running > 0 then
    health.info("running sessions: " .. table.concat(running, ", "))
  end
end

return M
