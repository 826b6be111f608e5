@ local s = string.rep("a", 40)
@ local r = s:find(string.rep("a-", 12) .. "b")
