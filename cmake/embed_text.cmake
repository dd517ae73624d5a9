# Writes a C++ file defining `const char* const ${SYMBOL}` holding the text of ${IN}
# (with `#pragma once` removed: the text is pasted into a main file).
file(READ ${IN} content)
string(REPLACE "#pragma once" "" content "${content}")
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\nnamespace ${NAMESPACE} {\nextern const char* const ${SYMBOL};\nconst char* const ${SYMBOL} = R\"MKTEXT(${content})MKTEXT\";\n}\n")
