# frozen_string_literal: true

# --refork-after: once a worker has served the threshold's requests it becomes the template,
# the workers after it are forked from its memory (test/rackup/lifecycle.ru's /origin names
# the processes that served in a worker's memory: the template's pid just before its own), the
# older ones are replaced one at a time under load without a failed request, and every
# worker is still the master's child (a subreaper), replaced when it dies, stopped by TERM.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/prometheus_text"
require "open3"

class TestRefork < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  # Heartbeats every second, so the master sees a worker's count soon after it is reached.
  FAST_BEATS = %w[--worker-timeout 4].freeze

  def test_after_n_requests_the_next_workers_fork_from_the_template_under_load
    server = start_up("-w", "2", "-t", "2", "--refork-after", "100", "--metrics-url", "tcp://127.0.0.1:0", *FAST_BEATS)
    metrics = server.wait_for(%r{metrics on http://127\.0\.0\.1:(\d+)})[1].to_i
    old = booted(server, 2)
    old.each { |pid| assert_equal server.pid, parent_of(pid) }
    load = LoadGenerator.new(server.port)
    index, template = reforked(server)
    assert_equal old[index], template
    fresh = workers_after(server, "phased restart done: 2 workers on phase 1")
    load.wait_for_ok(200)
    result = load.stop
    lost = LoadGenerator.lost(result, @ids_file)
    report("--refork-after under load", result, lost)
    assert_equal 0, result.refused
    assert_empty result.failed
    assert_empty lost
    assert_equal 2, fresh.size
    assert_empty fresh & old
    fresh.each { |pid| assert_equal server.pid, parent_of(pid), "worker #{pid} is not the master's child" }
    assert_equal server.pid, parent_of(template)
    assert_match(/\Aup_ruby \S+ template \[/, File.read("/proc/#{template}/cmdline").tr("\0", " "))
    # Each new worker's memory is the template's, which served requests before it.
    assert_equal fresh.sort, origins(server.port, fresh).keys.sort
    origins(server.port, fresh).each_value { |first| assert_equal template, first }
    (old - [template]).each { |pid| refute alive?(pid) }
    out, = Timeout.timeout(15) { Open3.capture2("curl", "-s", "-m", "10", "http://127.0.0.1:#{metrics}/metrics") }
    assert_equal 1, PrometheusText.new(out).sum("up_reforks_total")
    assert_equal 1, server.output.scan(/refork:/).size, "one refork for one threshold"
    server.signal(:TERM)
    assert server.wait.success?
    [template, *fresh].each { |pid| refute alive?(pid), "pid #{pid} outlived the master" }
  end

  def test_a_worker_that_dies_after_the_refork_is_replaced_from_the_template_and_ttin_forks_from_it
    server = start_up("-w", "2", "-t", "2", "--refork-after", "50", *FAST_BEATS)
    booted(server, 2)
    load = LoadGenerator.new(server.port)
    _, template = reforked(server)
    fresh = workers_after(server, "phased restart done: 2 workers on phase 1")
    load.stop
    victim = fresh.first
    index = server.output[/worker (\d+) booted \(pid #{victim}\)/, 1]
    Process.kill(:KILL, victim)
    server.wait_for(/worker #{index} \(pid #{victim}\) exited with .*; starting a new one/)
    known = server.output.scan(/booted \(pid (\d+)\)/).flatten
    replacement = server.wait_for(/worker #{index} booted \(pid (?!(?:#{known.join("|")})\))(\d+)\)/)[1].to_i
    server.signal(:TTIN)
    third = server.wait_for(/worker 2 booted \(pid (\d+)\)/)[1].to_i
    [replacement, third].each do |pid|
      assert_equal server.pid, parent_of(pid)
      assert_equal template, origins(server.port, [pid]).fetch(pid)
    end
    server.signal(:TERM)
    assert server.wait.success?
    [template, replacement, third, *fresh].each { |pid| refute alive?(pid), "pid #{pid} outlived the master" }
  end

  # A list: one refork at each threshold, the second template a worker of the first's
  # generation; the first template exits (and is waited for); no third refork.
  def test_each_threshold_of_a_list_makes_one_template
    server = start_up("-w", "2", "-t", "2", "--refork-after", "50,150", *FAST_BEATS)
    booted(server, 2)
    load = LoadGenerator.new(server.port, max_seconds: 60)
    _, first = reforked(server)
    gen1 = workers_after(server, "phased restart done: 2 workers on phase 1")
    m = server.wait_for(/refork: worker (\d+) \(pid (\d+)\) served 150\+ requests; it is the template of generation 2 .*\(template pid #{first} exits\)/)
    second = m[2].to_i
    assert_includes gen1, second
    gen2 = workers_after(server, "phased restart done: 2 workers on phase 2")
    load.wait_for_ok(300)
    result = load.stop
    assert_empty result.failed
    assert_empty LoadGenerator.lost(result, @ids_file)
    wait_gone(first)
    origins(server.port, gen2).each_value { |origin| assert_equal second, origin }
    assert_equal 2, server.output.scan(/refork:/).size
    server.signal(:TERM)
    assert server.wait.success?
    [second, *gen1, *gen2].each { |pid| refute alive?(pid), "pid #{pid} outlived the master" }
  end

  # USR2 after a refork: the template exits before the master re-executes (no process is left
  # behind), the new image serves the new code and reforks again from generation 1.
  def test_a_hot_restart_after_a_refork_leaves_no_template_behind
    server = start_up("-w", "2", "-t", "2", "--refork-after", "50", *FAST_BEATS)
    booted(server, 2)
    load = LoadGenerator.new(server.port)
    _, template = reforked(server)
    fresh = workers_after(server, "phased restart done: 2 workers on phase 1")
    File.write(@version_file, "2")
    server.signal(:USR2)
    server.wait_for(/hot restart: 2 new workers serve; 2 old workers drain/)
    fresh.each { |pid| server.wait_for(/worker \d+ \(pid #{pid}\) stopped/) }
    wait_gone(template)
    server.wait_for(/refork: worker \d+ \(pid (?!#{template}\))\d+\) served 50\+ requests; it is the template of generation 1 /)
    result = load.stop
    assert_empty result.failed
    assert_empty LoadGenerator.lost(result, @ids_file)
    assert_equal "2", version_and_pid(server.port).first
    server.signal(:TERM)
    assert server.wait.success?
  end

  # From a config file: the directive, and the hooks around a refork (before_refork in the
  # template, then after_worker_fork in the master and before_worker_boot in each new worker).
  def test_the_config_file_directive_and_the_hooks_around_a_refork
    events = File.join(@dir, "events")
    config = File.join(@dir, "up.rb")
    File.write(config, <<~RUBY)
      refork_after 50
      before_refork { |i| File.write(#{events.inspect}, "before_refork \#{i} \#{Process.pid}\n", mode: "a") }
      after_worker_fork { |i| File.write(#{events.inspect}, "after_worker_fork \#{i} \#{Process.pid}\n", mode: "a") }
      before_worker_boot { |i| File.write(#{events.inspect}, "before_worker_boot \#{i} \#{Process.pid}\n", mode: "a") }
    RUBY
    server = start_up("-w", "2", "-t", "2", "-C", config, *FAST_BEATS)
    booted(server, 2)
    load = LoadGenerator.new(server.port)
    index, template = reforked(server)
    fresh = workers_after(server, "phased restart done: 2 workers on phase 1")
    load.stop
    lines = File.readlines(events, chomp: true)
    refork_at = lines.index("before_refork #{index} #{template}")
    refute_nil refork_at, lines.join("\n")
    fresh.each do |pid|
      i = server.output[/worker (\d+) booted \(pid #{pid}\)/, 1]
      booted_at = lines.index("before_worker_boot #{i} #{pid}")
      refute_nil booted_at, "no before_worker_boot in #{pid}"
      assert_operator refork_at, :<, booted_at
    end
    assert_equal 4, lines.count { |l| l.start_with?("after_worker_fork") && l.end_with?(" #{server.pid}") }
    server.signal(:TERM)
    assert server.wait.success?
  end

  # logrotate after a refork: HUP reaches the template too, so a worker it forks later logs
  # to the new file, not the renamed one.
  def test_a_worker_forked_after_a_log_rotation_writes_to_the_new_log
    log = File.join(@dir, "up.log")
    server = start_up("-w", "2", "-t", "2", "--refork-after", "50", "-l", log, *FAST_BEATS, wait: false)
    port = wait_for_file(log, %r{listening on http://127\.0\.0\.1:(\d+)})[1].to_i
    wait_for_file(log, /worker 1 booted/)
    load = LoadGenerator.new(port)
    wait_for_file(log, /phased restart done: 2 workers on phase 1/)
    load.stop
    template = File.read(log)[/refork: worker \d+ \(pid (\d+)\)/, 1]
    File.rename(log, "#{log}.1")
    server.signal(:HUP)
    wait_for_file(log, /HUP: reopened/)
    server.signal(:TTIN)
    pid = wait_for_file(log, /worker 2 booted \(pid (\d+)\)/)[1].to_i
    assert_equal template.to_i, origins(port, [pid]).fetch(pid)
    refute_match(/worker 2 booted/, File.read("#{log}.1"))
    server.signal(:TERM)
    assert server.wait.success?
  end

  def test_thresholds_must_be_positive_and_increasing
    ["0", "100,50", "ten"].each do |value|
      out, status = Timeout.timeout(20) do
        Open3.capture2e(RbConfig.ruby, CLIProcess::EXE, "-p", "0", "-w", "2", "--refork-after", value, APP)
      end
      refute status.success?
      assert_match(/--refork-after /, out)
    end
  end

  private

  # Waits for the refork line; returns [index, pid] of the worker that became the template.
  def reforked(server)
    m = server.wait_for(/refork: worker (\d+) \(pid (\d+)\) served \d+\+ requests; it is the template of generation \d+/)
    [m[1].to_i, m[2].to_i]
  end

  # The pids of the workers that booted after the last refork line, once line is logged.
  def workers_after(server, line)
    server.wait_for(/#{Regexp.escape(line)}/)
    log = server.output
    after = log[log.rindex("refork:")..]
    after[0...after.index(line)].scan(/worker \d+ booted \(pid (\d+)\)/).flatten.map(&:to_i)
  end

  # { pid => the process whose memory it was forked from } for each of pids (nil: forked
  # from the master, which serves nothing), from GET /origin: slow calls at once, so that busy
  # workers leave new connections to the others.
  def origins(port, pids)
    seen = {}
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 20
    until (pids - seen.keys).empty?
      flunk "no answer from #{pids - seen.keys}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      Array.new(8) { Thread.new { get("/origin?sleep=0.2", port: port).body.split.map(&:to_i) } }.each do |t|
        *lineage, pid = t.value
        seen[pid] = lineage.last
      end
    end
    seen.slice(*pids)
  end

  def parent_of(pid)
    File.read("/proc/#{pid}/stat")[/\) \w (\d+)/, 1].to_i
  end

  # A process the master waited for is gone from /proc (a zombie would still be there).
  def wait_gone(pid)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    sleep 0.05 while File.exist?("/proc/#{pid}") && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    refute File.exist?("/proc/#{pid}"), "pid #{pid} was not waited for"
  end
end
