# frozen_string_literal: true
# backtick_javascript: true

# The identity of the running process, which Opal fixed at 0 (Process.pid) or left out
# (Process.ppid, $0): under up_node every worker answered 0, and apps log the pid and key
# per-process state (database connections) by it. On Node these are the process's own;
# elsewhere Opal's answers stay. `$$` is rewritten to Process.pid when compiled
# (Up::Node::Rewriters::ProcessId): Opal compiled it as the JS global object.
module Process
  if `typeof process !== 'undefined' && typeof process.pid === 'number'`
    def self.pid
      `process.pid`
    end

    def self.ppid
      `process.ppid`
    end
  end
end

# The program as MRI names it: the script that runs (Node's argv[1]).
if `typeof process !== 'undefined' && Array.isArray(process.argv) && typeof process.argv[1] === 'string'`
  $0 = `process.argv[1]`
end
alias $PROGRAM_NAME $0
