" ShapeScript syntax, for highlighting before (or without) the language server's semantic
" tokens: keywords, the conditional's `if`/`else` (v0.2), literals, dtypes, comments.
if exists('b:current_syntax')
  finish
endif

syntax keyword shapescriptItem dim model fn import
syntax keyword shapescriptStatement return
syntax keyword shapescriptRepeat for in
syntax keyword shapescriptConditional if else
syntax keyword shapescriptOperator and or not
syntax keyword shapescriptBoolean true false
syntax keyword shapescriptConstant inf causal
syntax keyword shapescriptType f16 bf16 f32 f64 i32 i64 bool Index
syntax match shapescriptNumber '\<\d\+\(\.\d*\)\=\([eE][-+]\=\d\+\)\=\>'
syntax match shapescriptOperator '|>\|->\|\*\*\|//\|[-+*/%@!<>=]'
syntax match shapescriptDecorator '^@\w\+'
syntax region shapescriptString start='"' end='"' oneline
syntax match shapescriptComment '#.*$'

highlight default link shapescriptItem Keyword
highlight default link shapescriptStatement Statement
highlight default link shapescriptRepeat Repeat
highlight default link shapescriptConditional Conditional
highlight default link shapescriptOperator Operator
highlight default link shapescriptBoolean Boolean
highlight default link shapescriptConstant Constant
highlight default link shapescriptType Type
highlight default link shapescriptNumber Number
highlight default link shapescriptDecorator PreProc
highlight default link shapescriptString String
highlight default link shapescriptComment Comment

let b:current_syntax = 'shapescript'
