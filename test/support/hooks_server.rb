# frozen_string_literal: true

# exe/up_ruby with an Up::Hooks, as the config file will give one, for test/test_hooks.rb:
# every hook appends "NAME ARGS... pid=PID ppid=PPID" to the file $UP_TEST_HOOKS names.
$LOAD_PATH.unshift(File.expand_path("../../lib", __dir__))
require "up/cli"
require "up/launcher"

path = ENV.fetch("UP_TEST_HOOKS")
hooks = Up::Hooks.new
Up::Hooks::NAMES.each do |name|
  hooks.add(name) do |*args|
    File.open(path, "a") { |f| f.write("#{[name, *args].join(" ")} pid=#{Process.pid} ppid=#{Process.ppid}\n") }
  end
end
options = Up::CLI.new(ARGV).parse
exit Up::Launcher.new(options, hooks: hooks).run
