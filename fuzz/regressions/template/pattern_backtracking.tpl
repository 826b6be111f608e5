@ local s = string.rep("a", 40)
@ local r = string.find(s, string.rep("a-", 12) .. "b")
