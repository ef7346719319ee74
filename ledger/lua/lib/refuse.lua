-- refuse(code, message): stop the command with an error reply "<CODE> <message>"; nothing was
-- written yet, because every command checks before it emits
local function refuse(code, message)
  error({err = code .. ' ' .. message})
end
