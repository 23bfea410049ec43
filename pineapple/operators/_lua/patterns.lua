-- Bounded string patterns (see _patterns.py): run once per Lua 5.1 runtime
-- before the sandbox prelude, with (BUDGET, MAX_C_ITEMS) as its arguments.
local BUDGET, MAX_C_ITEMS = ...
local string, type, tonumber, error, unpack = string, type, tonumber, error, unpack
local find, match, gmatch, gsub = string.find, string.match, string.gmatch, string.gsub
local byte, sub, rep, char = string.byte, string.sub, string.rep, string.char
local floor, concat = math.floor, table.concat
local getinfo = debug.getinfo

-- Item kinds of a parsed pattern.
local SINGLE, OPT, STAR, PLUS, MIN = 1, 2, 3, 4, 5
local OPEN, POSITION, CLOSE, BALANCE, FRONTIER, BACKREF, DOLLAR, FAIL = 6, 7, 8, 9, 10, 11, 12, 13
local QUANTIFIER = {[63] = OPT, [42] = STAR, [43] = PLUS, [45] = MIN}
local TWO63 = 2 ^ 63

-- Errors name the line of the code that called string.find & co, as C's
-- luaL_error does: ENTRY holds the first line of each public wrapper, and
-- raise() walks up to the first of them and reports its caller.
local ENTRY = {}
-- No function on the way from a wrapper to raise() may tail-call: a tail
-- call drops the caller's frame, which raise() looks for. pass(f()) calls f
-- as a plain call; (f()) keeps one value.
local function pass(...) return ... end
local function entry_level()
  for level = 3, 64 do
    local info = getinfo(level, "S")
    if not info then return nil end
    if info.source == "=patterns" and ENTRY[info.linedefined] then return level end
  end
end
local function raise(msg)
  error(msg, entry_level() or 0)
end
local function bad_argument(narg, msg)
  local level = entry_level()
  local info = level and getinfo(level - 1, "n")
  local name = info and info.name or "?"
  if info and info.namewhat == "method" then
    narg = narg - 1
    if narg == 0 then raise("calling '" .. name .. "' on bad self (" .. msg .. ")") end
  end
  raise("bad argument #" .. narg .. " to '" .. name .. "' (" .. msg .. ")")
end
local function check_string(v, narg)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then return v .. "" end
  bad_argument(narg, "string expected, got " .. t)
end
-- luaL_optinteger: C truncates toward zero; NaN and values out of range become -2^63.
local function check_integer(v, narg, default)
  if v == nil then return default end
  local x = tonumber(v)
  if x == nil then bad_argument(narg, "number expected, got " .. type(v)) end
  if x ~= x or x >= TWO63 or x < -TWO63 then return -TWO63 end
  if x >= 0 then return floor(x) end
  return -floor(-x)
end
local function posrelat(pos, len)
  if pos < 0 then pos = pos + len + 1 end
  if pos >= 0 then return pos end
  return 0
end

-- Escape a one-character class so that it is a pattern item of its own.
local function as_item(text)
  if #text > 1 or text == "." then return text end
  local b = byte(text)
  if (b >= 48 and b <= 57) or (b >= 65 and b <= 90) or (b >= 97 and b <= 122) then return text end
  return "%" .. text
end

local ALL = {}
for b = 0, 255 do ALL[b + 1] = char(b) end
ALL = concat(ALL)
local SETS, nsets = {}, 0
-- The bytes a class matches, as {[byte] = true}, read from C's own matcher.
local function class_set(text)
  local set = SETS[text]
  if set then return set end
  set = {}
  if text == "." then
    for b = 0, 255 do set[b] = true end
  elseif #text == 1 then
    set[byte(text)] = true
  else
    for c in gmatch(ALL, text) do set[byte(c)] = true end
  end
  if nsets >= 256 then SETS, nsets = {}, 0 end
  SETS[text], nsets = set, nsets + 1
  return set
end

-- classEnd: the index after the class at i, or nil and C's message.
local function class_end(p, i, n)
  local c = byte(p, i)
  i = i + 1
  if c == 37 then
    if i > n then return nil, "malformed pattern (ends with '%')" end
    return i + 1
  end
  if c == 91 then
    if byte(p, i) == 94 then i = i + 1 end
    repeat
      if i > n then return nil, "malformed pattern (missing ']')" end
      local d = byte(p, i)
      i = i + 1
      if d == 37 and i <= n then i = i + 1 end
    until byte(p, i) == 93
    return i + 1
  end
  return i
end

-- The C matcher's step bound on a subject of n bytes (runs: longest run per
-- quantified item, default n). See the module docstring.
local function cost(P, n, runs)
  local kinds, widths = P.kind, P.width
  local c, trivial, scan = 1, true, 0
  for k = P.count, 1, -1 do
    local kind, w = kinds[k], widths[k]
    local r = runs and runs[k] or n
    if kind == SINGLE then
      c, trivial = w + c, false
    elseif kind == OPT then
      if trivial or n == 0 then c = w + c else c = w + 2 * c end
    elseif kind == STAR or kind == PLUS then
      if trivial then scan, c = scan + (n + 1) * w, w + c else c = (r + 1) * (w + c) end
      if kind == PLUS then trivial = false end
    elseif kind == MIN then
      if trivial then c = 1 + c else c = (r + 1) * (w + c) end
    elseif kind == BALANCE or kind == BACKREF then
      c, trivial = n + 1 + c, false
    elseif kind == FRONTIER then
      c, trivial = 2 * w + c, false
    elseif kind == DOLLAR or kind == FAIL then
      c, trivial = 1, false
    else
      c = 1 + c
    end
  end
  local starts = P.anchor and 1 or n + 1
  return starts * c + scan
end

-- Parse a pattern into items (what C's match() reads, in order). A
-- malformed item becomes a FAIL item: C raises only when it reaches it.
local function compile(raw, anchoring)
  local z = find(raw, "\0", 1, true)
  local p = z and sub(raw, 1, z - 1) or raw
  local n = #p
  local P = {kind = {}, text = {}, aux = {}, width = {}, item = {}, anchor = false}
  local kinds, texts, aux, widths, items = P.kind, P.text, P.aux, P.width, P.item
  local i = 1
  if anchoring and byte(p, 1) == 94 then P.anchor, i = true, 2 end
  local k, level, state = 0, 0, {}
  while i <= n do
    local c, d = byte(p, i), byte(p, i + 1)
    local kind, text, a, msg
    if c == 40 then
      if level >= 32 then
        msg = "too many captures"
      else
        level = level + 1
        a = level
        if d == 41 then kind, i = POSITION, i + 2 else kind, i = OPEN, i + 1 end
        state[level] = kind
      end
    elseif c == 41 then
      local l = level
      while l >= 1 and state[l] ~= OPEN do l = l - 1 end
      if l == 0 then msg = "invalid pattern capture" else
        kind, a, i = CLOSE, l, i + 1
        state[l] = CLOSE
      end
    elseif c == 37 and d == 98 then
      if i + 3 > n then msg = "unbalanced pattern" else
        kind, text, i = BALANCE, "^" .. sub(p, i, i + 3), i + 4
      end
    elseif c == 37 and d == 102 then
      if byte(p, i + 2) ~= 91 then msg = "missing '[' after '%f' in pattern" else
        local e
        e, msg = class_end(p, i + 2, n)
        if e then kind, text, i = FRONTIER, sub(p, i + 2, e - 1), e end
      end
    elseif c == 37 and d and d >= 48 and d <= 57 then
      local l = d - 48
      if l < 1 or l > level or state[l] == OPEN then msg = "invalid capture index" else
        kind, a, i = BACKREF, l, i + 2
      end
    elseif c == 36 and i == n then
      kind, i = DOLLAR, i + 1
    else
      local e
      e, msg = class_end(p, i, n)
      if e then
        text = sub(p, i, e - 1)
        kind = QUANTIFIER[byte(p, e)] or SINGLE
        i = kind == SINGLE and e or e + 1
      end
    end
    k = k + 1
    if msg then
      kinds[k], texts[k], widths[k] = FAIL, msg, 1
      break
    end
    kinds[k], texts[k], aux[k] = kind, text, a
    widths[k] = (kind ~= BALANCE and text) and #text or 1
    if text and kind ~= BALANCE then items[k] = as_item(text) end
  end
  P.count, P.level, P.state = k, level, state
  P.maxref = level > 0 and level or 1
  local clean = k <= MAX_C_ITEMS
  for l = 1, level do
    if state[l] == OPEN then clean = false end
  end
  for j = 1, k do
    if kinds[j] == FAIL then clean = false end
  end
  P.clean = clean
  -- The longest subject whose worst case fits the budget (-1: never C).
  local lo, hi = -1, 2 ^ 31
  if clean then
    while hi - lo > 1 do
      local mid = floor((lo + hi) / 2)
      if cost(P, mid) <= BUDGET then lo = mid else hi = mid end
    end
  end
  P.safe = lo
  P.psafe = floor(BUDGET / (#raw + 1))
  P.nospecials = not find(p, "[%^%$%*%+%?%.%(%[%%%-]")
  P.fsafe = P.nospecials and P.psafe or lo
  return P
end

local ANCHORED, GMATCHED, ncompiled = {}, {}, 0
-- The parsed pattern (anchoring: '^' anchors it, as in find, match and gsub).
local function compiled(anchoring, p)
  local P = (anchoring and ANCHORED or GMATCHED)[p]
  if P then return P end
  if ncompiled >= 512 then ANCHORED, GMATCHED, ncompiled = {}, {}, 0 end
  P = compile(p, anchoring)
  local cache = anchoring and ANCHORED or GMATCHED
  cache[p], ncompiled = P, ncompiled + 1
  return P
end

-- Second look for a subject longer than P.safe: bound each quantified
-- class's longest run with a linear C search for R + 1 of it in a row.
local RUNS_OF, RUNS, CHECKS = nil, {}, {8, 64}
local function run_bound(item, s, n)
  if item == "." then return n end
  if RUNS_OF ~= s then RUNS_OF, RUNS = s, {} end
  local r = RUNS[item]
  if r then return r end
  r = n
  for j = 1, #CHECKS do
    local R = CHECKS[j]
    if (n + 1) * (R + 2) * #item > BUDGET then break end
    if not find(s, rep(item, R + 1)) then
      r = R
      break
    end
  end
  RUNS[item] = r
  return r
end
local function fits(P, s, n)
  if not P.clean then return false end
  if n <= P.safe then return true end
  local runs, kinds = {}, P.kind
  for k = 1, P.count do
    local kind = kinds[k]
    if kind == STAR or kind == PLUS or kind == MIN then runs[k] = run_bound(P.item[k], s, n) end
  end
  return cost(P, n, runs) <= BUDGET
end

-- The matcher in Lua -----------------------------------------------------

local CAP_INIT, CAP_LEN, STACK = {}, {}, {}
local RUN_P, RUN_S, RUN_FROM, RUN_TO = nil, nil, {}, {}

local function prepare(P)
  if P.set then return end
  local set, run, last = {}, {}, {}
  local kinds, texts, items = P.kind, P.text, P.item
  for k = 1, P.count do
    local kind = kinds[k]
    if kind <= MIN or kind == FRONTIER then set[k] = class_set(texts[k]) end
    if kind == STAR or kind == PLUS or kind == MIN then
      run[k] = "^" .. items[k] .. "*"
      last[k] = kinds[k + 1] == DOLLAR
    end
  end
  P.run, P.before_dollar = run, last
  P.skip = not P.anchor and (kinds[1] == SINGLE or kinds[1] == PLUS) and items[1] or nil
  P.set = set
end

-- The first position after the run of item k's class that starts at pos.
local function run_end(P, k, s, pos)
  local from, to = RUN_FROM[k], RUN_TO[k]
  if from and from <= pos and pos <= to then return to end
  local _, e = find(s, P.run[k], pos)
  RUN_FROM[k], RUN_TO[k] = pos, e + 1
  return e + 1
end

-- C's match() from pos: the end (exclusive) of the first match, or nil.
local function do_match(P, s, n, pos)
  if RUN_P ~= P or RUN_S ~= s then RUN_P, RUN_S, RUN_FROM, RUN_TO = P, s, {}, {} end
  local kinds, sets, aux, last = P.kind, P.set, P.aux, P.before_dollar
  local stack, top, k = STACK, 0, 1
  while true do
    local kind, ok = kinds[k], true
    if kind == nil then
      return pos
    elseif kind == SINGLE then
      if sets[k][byte(s, pos)] then pos, k = pos + 1, k + 1 else ok = false end
    elseif kind == STAR or kind == PLUS or kind == MIN then
      local lo = pos
      if kind == PLUS then
        if sets[k][byte(s, pos)] then lo = pos + 1 else ok = false end
      end
      if not ok then
        ok = false -- a '+' whose first character does not match
      elseif last[k] then
        -- only a run reaching the end can satisfy the final '$'
        if run_end(P, k, s, lo) == n + 1 then return n + 1 end
        ok = false
      elseif kind == MIN then
        top = top + 3
        stack[top - 2], stack[top - 1], stack[top] = k, lo, lo
        k = k + 1
      else
        local e = run_end(P, k, s, lo)
        if e > lo then
          top = top + 3
          stack[top - 2], stack[top - 1], stack[top] = k, lo, e
        end
        pos, k = e, k + 1
      end
    elseif kind == OPT then
      if sets[k][byte(s, pos)] then
        top = top + 3
        stack[top - 2], stack[top - 1], stack[top] = k, pos, pos
        pos = pos + 1
      end
      k = k + 1
    elseif kind == OPEN or kind == POSITION then
      CAP_INIT[aux[k]], k = pos, k + 1
    elseif kind == CLOSE then
      local l = aux[k]
      CAP_LEN[l], k = pos - CAP_INIT[l], k + 1
    elseif kind == BALANCE then
      local _, e = find(s, P.text[k], pos)
      if e then pos, k = e + 1, k + 1 else ok = false end
    elseif kind == FRONTIER then
      local set = sets[k]
      if set[pos > 1 and byte(s, pos - 1) or 0] or not set[byte(s, pos) or 0] then
        ok = false
      else
        k = k + 1
      end
    elseif kind == BACKREF then
      local l = aux[k]
      local len, init = CAP_LEN[l], CAP_INIT[l]
      if P.state[l] ~= POSITION and pos + len - 1 <= n
        and sub(s, pos, pos + len - 1) == sub(s, init, init + len - 1) then
        pos, k = pos + len, k + 1
      else
        ok = false
      end
    elseif kind == DOLLAR then
      if pos == n + 1 then return pos end
      ok = false
    else
      raise(P.text[k])
    end
    while not ok do
      if top == 0 then return nil end
      local ck, lo, cur = stack[top - 2], stack[top - 1], stack[top]
      local ckind = kinds[ck]
      if ckind == MIN then
        if sets[ck][byte(s, cur)] then
          cur = cur + 1
          stack[top], k, pos, ok = cur, ck + 1, cur, true
        else
          top = top - 3
        end
      elseif ckind == OPT then
        top, k, pos, ok = top - 3, ck + 1, lo, true
      else
        cur = cur - 1
        if cur == lo then top = top - 3 else stack[top] = cur end
        k, pos, ok = ck + 1, cur, true
      end
    end
  end
end

-- The next start at or after pos where the first item can match (nil: none).
local function next_start(P, s, pos)
  if P.skip then return (find(s, P.skip, pos)) end
  return pos
end

-- push_onecapture: capture l (1-based) of the match s[st, e).
local function capture(P, l, s, st, e)
  if l > P.level then
    if l == 1 then return sub(s, st, e - 1) end
    raise("invalid capture index")
  end
  local state = P.state[l]
  if state == POSITION then return CAP_INIT[l] end
  if state == OPEN then raise("unfinished capture") end
  local init = CAP_INIT[l]
  return sub(s, init, init + CAP_LEN[l] - 1)
end

-- push_captures (st nil: none when there is no capture, as find wants).
local function captures(P, s, st, e)
  local nl = P.level
  if nl == 0 then
    if st then return sub(s, st, e - 1) end
    return
  end
  if nl == 1 then return (capture(P, 1, s, st, e)) end
  local t = {}
  for l = 1, nl do t[l] = capture(P, l, s, st, e) end
  return unpack(t, 1, nl)
end

local function plain_find(s, p, st, n)
  local lp = #p
  if lp == 0 then return st, st - 1 end
  if (n - st + 1) * lp <= BUDGET then
    return find(s, p, st, true)
  end
  local span, pos = floor(BUDGET / lp) + 1, st
  while pos + lp - 1 <= n do
    local last = pos + span - 1
    local e = last + lp - 1
    if e > n then e = n end
    local i = find(sub(s, pos, e), p, 1, true)
    if i then return pos + i - 1, pos + i + lp - 2 end
    pos = last + 1
  end
  return nil
end

local function find_aux(isfind, s, p, init, plain)
  s = check_string(s, 1)
  p = check_string(p, 2)
  local n = #s
  local st = posrelat(check_integer(init, 3, 1), n) - 1
  if st < 0 then st = 0 elseif st > n then st = n end
  st = st + 1
  local P = compiled(true, p)
  if isfind and (plain or P.nospecials) then return plain_find(s, p, st, n) end
  if fits(P, s, n) then
    if isfind then return find(s, p, init, plain) end
    return match(s, p, init)
  end
  prepare(P)
  local pos = st
  repeat
    pos = next_start(P, s, pos)
    if not pos then return nil end
    local e = do_match(P, s, n, pos)
    if e then
      if isfind then return pos, e - 1, captures(P, s, nil, nil) end
      return pass(captures(P, s, pos, e))
    end
    pos = pos + 1
  until pos > n + 1 or P.anchor
  return nil
end


-- The fast paths: a cached pattern (so p is a string), a string subject
-- within the pattern's safe length, and arguments C cannot refuse.
string.find = function(s, p, init, plain)
  local P = ANCHORED[p]
  if P and type(s) == "string" and #s <= (plain and P.psafe or P.fsafe)
    and (init == nil or type(init) == "number") then
    return find(s, p, init, plain)
  end
  return pass(find_aux(true, s, p, init, plain))
end

string.match = function(s, p, init)
  local P = ANCHORED[p]
  if P and type(s) == "string" and #s <= P.safe and (init == nil or type(init) == "number") then
    return match(s, p, init)
  end
  return pass(find_aux(false, s, p, init))
end

-- gmatch_aux: each call resumes after the last match.
local function iterator(P, s, n)
  local pos = 1
  return function()
    while pos <= n + 1 do
      local st = next_start(P, s, pos)
      if not st then break end
      local e = do_match(P, s, n, st)
      if e then
        pos = e == st and e + 1 or e
        return pass(captures(P, s, st, e))
      end
      pos = st + 1
    end
    pos = n + 2
  end
end

local function gmatch_slow(s, p)
  s = check_string(s, 1)
  p = check_string(p, 2)
  local P = compiled(false, p)
  local n = #s
  if fits(P, s, n) then return gmatch(s, p) end
  prepare(P)
  return iterator(P, s, n)
end

string.gmatch = function(s, p)
  local P = GMATCHED[p]
  if P and type(s) == "string" and #s <= P.safe then return gmatch(s, p) end
  local it = gmatch_slow(s, p)
  return it
end

local REPL_OK = {string = true, number = true, ["function"] = true, table = true}
local REFS, nrefs = {}, 0
-- The highest capture a replacement string names (%1-%9; 0: none).
local function highest_ref(repl)
  local top = REFS[repl]
  if top then return top end
  top = 0
  for d in gmatch(repl, "%%(.?)") do
    local b = byte(d)
    if b and b >= 49 and b <= 57 and b - 48 > top then top = b - 48 end
  end
  if nrefs >= 256 then REFS, nrefs = {}, 0 end
  REFS[repl], nrefs = top, nrefs + 1
  return top
end

local function checked_value(v)
  if v then
    local t = type(v)
    if t ~= "string" and t ~= "number" then raise("invalid replacement value (a " .. t .. ")") end
  end
  return v
end

-- add_s: a replacement string with %0-%9 and %x (x itself; a final % adds "\0").
local function expand(repl, P, s, st, e)
  local out, no, lit, i = {}, 0, 1, 1
  while true do
    local j = find(repl, "%", i, true)
    if not j then break end
    if lit < j then no = no + 1; out[no] = sub(repl, lit, j - 1) end
    local d = byte(repl, j + 1)
    no = no + 1
    if d == 48 then
      out[no] = sub(s, st, e - 1)
    elseif d and d >= 49 and d <= 57 then
      out[no] = capture(P, d - 48, s, st, e)
    else
      out[no] = d and char(d) or "\0"
    end
    i = j + 2
    lit = i
  end
  if lit <= #repl then no = no + 1; out[no] = sub(repl, lit) end
  return concat(out, "", 1, no)
end

local function replacement(P, s, st, e, repl, tr)
  if tr == "string" then return (expand(repl, P, s, st, e)) end
  local v
  if tr == "function" then
    v = repl(captures(P, s, st, e))
  else
    v = repl[capture(P, 1, s, st, e)]
  end
  if not v then return sub(s, st, e - 1) end
  return (checked_value(v))
end

local function gsub_slow(s, p, repl, max_s)
  s = check_string(s, 1)
  p = check_string(p, 2)
  local n = #s
  local max = check_integer(max_s, 4, n + 1) % 2 ^ 32
  if max >= 2 ^ 31 then max = max - 2 ^ 32 end
  local tr = type(repl)
  if not REPL_OK[tr] then bad_argument(3, "string/function/table expected") end
  if tr == "number" then repl, tr = repl .. "", "string" end
  local P = compiled(true, p)
  if fits(P, s, n) and (tr ~= "string" or highest_ref(repl) <= P.maxref) then
    if tr == "string" then return gsub(s, p, repl, max_s) end
    local f = repl
    if tr == "table" then
      return gsub(s, p, function(c) return (checked_value(f[c])) end, max_s)
    end
    return gsub(s, p, function(...) return (checked_value(f(...))) end, max_s)
  end
  prepare(P)
  local out, no, keep, pos, count = {}, 0, 1, 1, 0
  while count < max do
    local e
    if P.anchor then e = do_match(P, s, n, pos) else
      local st = next_start(P, s, pos)
      if st then
        pos = st
        e = do_match(P, s, n, pos)
      else
        pos = n + 1
      end
    end
    if e then
      count = count + 1
      if keep < pos then no = no + 1; out[no] = sub(s, keep, pos - 1) end
      no = no + 1
      out[no] = replacement(P, s, pos, e, repl, tr)
      keep = e
    end
    if e and e > pos then pos = e
    elseif pos <= n then pos = pos + 1
    else break end
    if P.anchor then break end
  end
  if keep <= n then no = no + 1; out[no] = sub(s, keep, n) end
  return concat(out, "", 1, no), count
end

string.gsub = function(s, p, repl, max_s)
  local P, top = ANCHORED[p], REFS[repl] -- REFS: replacement strings seen before
  if P and top and top <= P.maxref and type(s) == "string" and #s <= P.safe
    and (max_s == nil or type(max_s) == "number") then
    return gsub(s, p, repl, max_s)
  end
  local r, count = gsub_slow(s, p, repl, max_s)
  return r, count
end

if string.gfind == gmatch then string.gfind = string.gmatch end

for _, f in ipairs({string.find, string.match, string.gmatch, string.gsub, iterator()}) do
  ENTRY[getinfo(f, "S").linedefined] = true
end
