# frozen_string_literal: true

# The process's own identity: Process.pid and ppid against /proc, $$, $0 and $PROGRAM_NAME.
stat = File.read("/proc/self/stat").split
p Process.pid == stat[0].to_i, Process.pid.positive?, $$ == Process.pid, "pid #{$$}" == "pid #{stat[0]}"
p Process.ppid == stat[3].to_i
p $0.is_a?(String), $0 == $PROGRAM_NAME, File.basename($0).start_with?("fix_process")
