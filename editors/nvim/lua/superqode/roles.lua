-- The role picker of :SuperQodeRun: role names completed from the server
-- (superqode.listRoles), :SuperQodeRun! ticks them in vim.ui.select.
local R = {}

local function sq()
  return require("superqode")
end

local RUN_WORDS = { "deep", "quick", "file" }

--- The roles the server reports for the current buffer's folder
--- (superqode.listRoles): `on_list(result)` with result.roles, result.agents.
function R.list(on_list)
  return sq().execute("superqode.listRoles", { uri = sq().buf_uri(0) }, on_list)
end

--- Who does the agent roles' work: the ACP agent named by agent.worker, or
--- the built-in loop over the configured provider.
function R.worker_line(list)
  local worker, others = nil, {}
  for _, a in ipairs(list.agents or {}) do
    if a.worker then
      worker = a.name .. " (ACP: " .. table.concat(a.command or {}, " ") .. ")"
    else
      table.insert(others, a.name)
    end
  end
  local provider = type(list.provider) == "string" and (" over provider " .. list.provider) or ""
  local line = "worker: " .. (worker or ("built-in loop" .. provider))
  if #others > 0 then
    line = line .. "; also configured: " .. table.concat(others, ", ")
  end
  return line
end

--- One role in the picker: ticked or not, its name, and what it does or why
--- it cannot run now.
function R.role_label(role, ticked)
  local text = (ticked and "[x] " or "[ ] ") .. role.name
  if role.canRun == false then
    return text .. " - cannot run now: " .. tostring(role.reason)
  end
  return text .. " - " .. (role.description or "")
end

--- Pick roles with vim.ui.select (each choice ticks or unticks one; the
--- first line runs), then run QE with them. The ticked ones at first are what
--- a plain :SuperQodeRun runs. `opts`: mode, file, as for M.run;
--- `on_done(roles or nil)` once the user ran or gave up.
function R.pick(opts, on_done)
  opts = opts or {}
  on_done = on_done or function() end
  return R.list(function(list)
    local roles = list.roles or {}
    local ticked = {}
    for _, r in ipairs(roles) do
      ticked[r.name] = r.default and true or nil
    end
    local function names()
      local out = {}
      for _, r in ipairs(roles) do
        if ticked[r.name] then
          table.insert(out, r.name)
        end
      end
      return out
    end
    -- Who does the agent roles' work: the built-in loop or an ACP agent of
    -- agents:, the configured one first; a choice moves to the next.
    local workers, worker = { "builtin" }, 1
    for _, a in ipairs(list.agents or {}) do
      table.insert(workers, a.name)
      if a.worker then
        worker = #workers
      end
    end
    local configured = worker
    local function ask()
      local items = { { run = true } }
      if #workers > 1 then
        table.insert(items, { worker = true })
      end
      for _, r in ipairs(roles) do
        table.insert(items, { role = r })
      end
      vim.ui.select(items, {
        prompt = "SuperQode roles (agent roles' " .. R.worker_line(list) .. ")",
        format_item = function(item)
          if item.run then
            local n = names()
            return "Run QE with: " .. (#n > 0 and table.concat(n, ", ") or "(nothing ticked)")
          end
          if item.worker then
            return "Agent roles' worker: " .. workers[worker] .. " (pick for the next)"
          end
          return R.role_label(item.role, ticked[item.role.name])
        end,
      }, function(item)
        if item == nil then
          return on_done(nil)
        end
        if item.run then
          local n = names()
          if #n == 0 then
            sq().notify("no role ticked: nothing to run", vim.log.levels.WARN)
            return on_done(nil)
          end
          sq().run({ mode = opts.mode, file = opts.file, roles = n,
                     worker = worker ~= configured and workers[worker] or nil })
          return on_done(n)
        end
        if item.worker then
          worker = worker % #workers + 1
          return vim.schedule(ask)
        end
        ticked[item.role.name] = not ticked[item.role.name] or nil
        vim.schedule(ask) -- the list again, with the new ticks
      end)
    end
    ask()
  end)
end

-- Role names per workspace folder, for completion: asked once (the first
-- listing imports every role on the server, a second or so), then kept; the
-- picker always asks afresh, since whether a role can run changes.
local names_by_folder = {}

local function role_names()
  local client = sq().client(0)
  local folder = client and client.config.root_dir or ""
  if names_by_folder[folder] == nil then
    local list = sq().execute_sync("superqode.listRoles", { uri = sq().buf_uri(0) }, 10000)
    if list == nil then
      return {} -- no server or no answer: asked again at the next completion
    end
    local names = {}
    for _, r in ipairs(list.roles or {}) do
      table.insert(names, r.name)
    end
    names_by_folder[folder] = names
  end
  return names_by_folder[folder]
end

--- :SuperQodeRun's arguments: deep/quick, file, and role names; the role
--- names come from the server (listRoles) for the current buffer's folder.
function R.complete_run(lead)
  local out = {}
  for _, w in ipairs(RUN_WORDS) do
    if vim.startswith(w, lead) then
      table.insert(out, w)
    end
  end
  for _, name in ipairs(role_names()) do
    if vim.startswith(name, lead) then
      table.insert(out, name)
    end
  end
  return out
end

--- :SuperQodeRun's arguments as M.run's options: deep/quick, file (or %),
--- and any other word a role name (the server checks it: an unknown one is
--- one line naming the known ones).
function R.parse_run_args(fargs)
  local run, roles = {}, {}
  for _, a in ipairs(fargs) do
    if a == "deep" or a == "quick" then
      run.mode = a
    elseif a == "file" or a == "%" then
      run.file = true
    else
      table.insert(roles, a)
    end
  end
  if #roles > 0 then
    run.roles = roles
  end
  return run
end

return R
