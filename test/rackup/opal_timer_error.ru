# frozen_string_literal: true

# Opal only (up_node): a JS timer raises after the response went out, as a streaming body
# writing from a timer can. No request is left to fail; the server must log it and go on.
run lambda { |_env|
  boom = -> { raise "kaboom from a timer" }
  `setTimeout(#{boom}, 0)`
  [200, {}, ["scheduled"]]
}
