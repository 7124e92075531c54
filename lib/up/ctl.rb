# frozen_string_literal: true

require "optparse"
require "socket"
require "uri"
require_relative "bind"
require_relative "config_file"
require_relative "process_alive"
require_relative "state_file"
require_relative "version"

module Up
  # upctl, UP!'s pumactl: sends a command to a running server through its control endpoint
  # (--control-url, with the token), or as a signal to the pid the pid file or the state file
  # names. Where the server is comes from the command line, then the state file (-S, or the
  # config file's state_path), then the config file (-C FILE, else config/up.rb when there is
  # one): its control_url, control_token and pidfile. Prints what the server answers (stats
  # as JSON). Created by exe/upctl; returns an exit status.
  class Ctl
    # name => [the signal it stands for (nil: the control endpoint only), what it does]
    COMMANDS = {
      "status" => [nil, "Say whether the server runs (status 0) or not (status 1)"],
      "stats" => [nil, "Print the server's figures, per worker, as JSON (needs the control endpoint)"],
      "restart" => ["USR2", "Hot restart: re-execute in place, same pid and sockets, the app loaded anew"],
      "phased-restart" => ["USR1", "Replace the workers one at a time with the app's new code (--no-preload)"],
      "stop" => ["TERM", "Stop gracefully: requests in flight finish first"],
      "halt" => ["QUIT", "Stop at once: requests in flight are cut off"],
      "reopen-logs" => ["HUP", "Reopen the log files (after logrotate)"],
      "reload-certs" => ["HUP", "Load the TLS certificates again"]
    }.freeze

    class UsageError < StandardError; end

    def initialize(argv, out: $stdout, err: $stderr)
      @argv = argv.dup
      @out = out
      @err = err
      @options = {}
    end

    def run
      command = parse
      return 0 unless command

      locate
      return status if command == "status"

      @options[:control_url] ? over_http(command) : by_signal(command)
    rescue UsageError, ConfigFile::Error, StateFile::Error => e
      @err.puts "upctl: #{e.message}"
      @err.puts "Try 'upctl --help'." if e.is_a?(UsageError)
      1
    rescue SystemCallError, IOError, SocketError => e
      @err.puts "upctl: #{e.message}"
      1
    end

    private

    def parse
      parser = OptionParser.new do |o|
        o.banner = "Usage: upctl [options] COMMAND"
        o.separator ""
        o.separator "Commands:"
        COMMANDS.each { |name, (_signal, what)| o.separator format("    %-18s%s", name, what) }
        o.separator ""
        o.separator "Where the server is (the command line, then the state file, then the config file):"
        o.on("-C", "--config FILE", "The server's config file: its control_url, control_token, pidfile",
             "and state_path (#{ConfigFile::DEFAULT_PATH} when there is one); a URL here is",
             "the control URL, as pumactl's -C") do |v|
          # pumactl's -C is its control URL: a URL here is taken as one.
          %r{\A(tcp|unix)://}.match?(v) ? @options[:control_url] = v : @options[:config_file] = v
        end
        o.on("-S", "--state-path FILE", "The server's state file (--state-path): pid, control URL, token") do |v|
          @options[:state_path] = v
        end
        o.on("--control-url URL", "The server's --control-url (tcp://HOST:PORT, unix://PATH)") { |v| @options[:control_url] = v }
        o.on("-T", "--control-token TOKEN", "The server's --control-token") { |v| @options[:control_token] = v }
        o.on("-P", "--pid-file FILE", "Send a signal to the pid in FILE instead (not for stats)") { |v| @options[:pid_file] = v }
        o.separator ""
        o.on("-v", "--version", "Print the version") { @out.puts "UP! #{Up::VERSION}" }
        o.on("-h", "--help", "Print this help") { @out.puts o }
      end
      rest = parser.parse(@argv)
      return nil if rest.empty? && (@argv & %w[-h --help -v --version]).any?
      raise UsageError, "one command: #{COMMANDS.keys.join(", ")}" unless rest.size == 1
      raise UsageError, "unknown command #{rest.first}" unless COMMANDS.key?(rest.first)

      rest.first
    rescue OptionParser::ParseError => e
      raise UsageError, e.message
    end

    # Fills in what the command line left out, from the state file and the config file.
    def locate
      file = config_file
      settings = file ? file.values : {}
      state_path = @options[:state_path] || settings[:state_path]
      state = state_path ? StateFile.read(state_path) : {}
      @pid = state[:pid]
      { control_url: [state[:control_url], settings[:control_url]],
        control_token: [state[:control_token], settings[:control_token]],
        pid_file: [nil, settings[:pid_file]] }.each do |key, (from_state, from_config)|
        @options[key] ||= from_state || from_config
      end
      return if @options[:control_url] || @options[:pid_file] || @pid

      raise UsageError, "where is the server? Give --control-url, --pid-file or --state-path, or a config file " \
                        "(-C, #{ConfigFile::DEFAULT_PATH}) that names one"
    end

    def config_file
      return ConfigFile.load(@options[:config_file]) if @options[:config_file]

      ConfigFile.load(ConfigFile::DEFAULT_PATH) if File.file?(ConfigFile::DEFAULT_PATH)
    end

    # The pid from the pid file, else the state file's.
    def pid
      return @pid unless @options[:pid_file]

      Integer(File.read(@options[:pid_file]).strip, 10)
    rescue ArgumentError
      raise UsageError, "#{@options[:pid_file]} holds no pid"
    end

    # By the pid when there is one (a signal 0 reaches it), else by asking the control endpoint.
    def status
      if @options[:pid_file] || @pid
        n = begin
          pid
        rescue Errno::ENOENT
          return not_running("no pid file #{@options[:pid_file]}")
        end
        return running("pid #{n}") if ProcessAlive.alive?(n)

        return not_running("pid #{n} is gone")
      end
      code = over_http("stats", quiet: true)
      code.zero? ? running(@options[:control_url]) : not_running("#{@options[:control_url]} does not answer")
    rescue SystemCallError, IOError, SocketError => e
      not_running("#{@options[:control_url]}: #{e.message}")
    end

    def running(how)
      @out.puts "UP! is running (#{how})"
      0
    end

    def not_running(why)
      @out.puts "UP! is not running (#{why})"
      1
    end

    # GET /COMMAND?token=... on the control endpoint, one connection, read to its close.
    def over_http(command, quiet: false)
      bind = Bind.parse(@options[:control_url], nil)
      socket = bind.unix? ? Socket.unix(bind.path) : Socket.tcp(bind.host, bind.port, connect_timeout: 5)
      token = URI.encode_www_form_component(@options[:control_token].to_s)
      socket.write("GET /#{command}?token=#{token} HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n")
      status, body = response(socket)
      (status == 200 ? @out : @err).puts(body) unless quiet
      status == 200 ? 0 : 1
    rescue Bind::Error => e
      raise UsageError, e.message
    ensure
      socket&.close
    end

    def response(socket)
      raw = socket.read
      head, body = raw.split("\r\n\r\n", 2)
      status = head.to_s[%r{\AHTTP/1\.\d (\d{3})}, 1].to_i
      body = decode_chunked(body.to_s) if head.to_s.match?(/^transfer-encoding: chunked/i)
      [status, body.to_s.chomp]
    end

    def decode_chunked(data)
      out = +""
      while (line_end = data.index("\r\n"))
        size = data[0, line_end].to_i(16)
        break if size.zero?

        out << data[line_end + 2, size]
        data = data[(line_end + 2 + size + 2)..] || ""
      end
      out
    end

    def by_signal(command)
      signal = COMMANDS.fetch(command).first or raise UsageError, "#{command} needs --control-url"
      n = pid
      Process.kill(signal, n)
      @out.puts "sent #{signal} to #{n}"
      0
    end
  end
end
