# frozen_string_literal: true

# up_node's app for --static-only (Up::Node::Launcher::STATIC_ONLY_APP): node/up_node/static_files.js
# answers every GET and HEAD and refuses other methods, so this sees only what it leaves (an
# upgrade).
run ->(_env) { [404, { "content-type" => "text/plain" }, ["Not Found\n"]] }
