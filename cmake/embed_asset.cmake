# Turns a web asset into a C++ source: cmake -DIN=<file> -DOUT=<file.cpp>
# -DNAME=<identifier> -P embed_asset.cmake. The asset becomes
# memcg::web::<NAME>, a std::string_view (web/ui.h).
file(READ "${IN}" content)
if(content MATCHES "\\)memcg_asset\"")
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )memcg_asset\"")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from ${IN} by cmake/embed_asset.cmake; do not edit.\n"
  "#include \"web/ui.h\"\n"
  "namespace memcg::web {\n"
  "const std::string_view ${NAME} = R\"memcg_asset(${content})memcg_asset\";\n"
  "}  // namespace memcg::web\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
