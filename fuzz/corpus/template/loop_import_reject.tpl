@ local n = variant.dstate
@ for i = 1, n do
float s$(i) = $(string.format("%d", i * 2));
@ end
@ local t = import("scan_common")
// $(variant.spec) $(variant.kernel_name)
@ if variant.z then reject("z", "no gate here") end
