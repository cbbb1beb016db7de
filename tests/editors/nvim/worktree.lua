-- :SuperQodeWorktreeNew feature-x opens the new worktree in a new tab (tab cwd =
-- the worktree); :SuperQodeWorktreeOpen without a name offers a picker over
-- superqode.listWorktrees and opens the pick in another tab.
local H = dofile(vim.env.SQ_HARNESS)

H.run(function()
  local sq = require("superqode")
  sq.setup({ cmd = { vim.env.SQ_SERVER } })
  local buf = vim.api.nvim_get_current_buf()
  H.wait(15000, function() return sq.client(buf) ~= nil end, "the server to attach")
  H.step("attached")

  vim.cmd("SuperQodeWorktreeNew feature-x")
  H.wait(30000, function() return vim.fn.tabpagenr("$") == 2 end, "a new tab for the worktree")
  H.step("new_tab", {
    tab = vim.fn.tabpagenr(),
    cwd = vim.fn.getcwd(-1, vim.fn.tabpagenr()),
    first_tab_cwd = vim.fn.getcwd(-1, 1),
    notes = vim.fn.execute("messages"),
  })

  -- The picker: record what it offers and choose the first item.
  local picked = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for _, it in ipairs(items) do table.insert(labels, opts.format_item(it)) end
    table.insert(picked, { prompt = opts.prompt, items = labels })
    on_choice(items[1], 1)
  end
  vim.cmd("tabfirst")
  vim.cmd("SuperQodeWorktreeOpen")
  H.wait(30000, function() return vim.fn.tabpagenr("$") == 3 end, "a tab for the opened worktree")
  H.step("picker", picked)
  H.step("open_tab", { tab = vim.fn.tabpagenr(), cwd = vim.fn.getcwd(-1, vim.fn.tabpagenr()) })

  -- Bad input is one line, and nothing opens.
  local errors = {}
  local notify = vim.notify
  vim.notify = function(msg, level) table.insert(errors, { msg = msg, level = level }) end
  vim.cmd("tabfirst")
  vim.cmd("SuperQodeWorktreeOpen ghost")
  vim.cmd("SuperQodeWorktreeNew feature-x --task oops")
  H.wait(15000, function() return #errors >= 2 end, "two error notes")
  vim.notify = notify
  H.step("errors", errors)
  H.step("tabs", vim.fn.tabpagenr("$"))
end)
