# frozen_string_literal: true

# The process's own identity: Process.pid and ppid against /proc, $$, $0 and $PROGRAM_NAME.
# Its fields are read after the command name's ")": a name may hold spaces.
stat = File.read("/proc/self/stat")
pid = stat[/\A\d+/]
after_name = stat[(stat.rindex(")") + 2)..].split
p Process.pid == pid.to_i, Process.pid.positive?, $$ == Process.pid, "pid #{$$}" == "pid #{pid}"
p Process.ppid == after_name[1].to_i
p $0.is_a?(String), $0 == $PROGRAM_NAME, File.basename($0).start_with?("fix_process")
