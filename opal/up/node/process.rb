# frozen_string_literal: true
# backtick_javascript: true

# Process.pid is 0 in Opal's corelib (it has no process to ask in a browser); up_node runs
# in a Node process, whose pid the app's logs, pid-keyed files and cluster workers need to
# tell processes apart, as on MRI. Only the up_node bundle loads this file (boot.rb).
module Process
  def self.pid
    `process.pid`
  end
end
