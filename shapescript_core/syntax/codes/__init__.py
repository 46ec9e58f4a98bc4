"""The syntax codes E0101-E0104, one module per code: each holds its code's message
builders, so that the lexer, the parser and the checker (a construct that parses but
can't be read, such as `Index` without `[V]`) word them the same way. The checks
themselves are in syntax/lexer.py (`tokenize`: layout, brackets, strings) and
syntax/parser.py (`_syntax_error`: what the grammar can't read). The language's other
codes are in check/codes/, above this layer."""
