# frozen_string_literal: true

require "optparse"
require "socket"
require "uri"
require_relative "bind"
require_relative "version"

module Up
  # upctl, UP!'s pumactl: sends a command to a running server through its control endpoint
  # (--control-url, with --control-token), or as a signal to the pid in a pid file. Prints
  # what the server answers (stats as JSON). Created by exe/upctl; returns an exit status.
  class Ctl
    COMMANDS = {
      "stats" => nil,
      "restart" => "USR2",
      "phased-restart" => "USR1",
      "stop" => "TERM",
      "halt" => "QUIT",
      "reopen-logs" => "HUP",
      "reload-certs" => "HUP"
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

      @options[:control_url] ? over_http(command) : by_signal(command)
    rescue UsageError => e
      @err.puts "upctl: #{e.message}"
      @err.puts "Try 'upctl --help'."
      1
    rescue SystemCallError, IOError, SocketError => e
      @err.puts "upctl: #{e.message}"
      1
    end

    private

    def parse
      parser = OptionParser.new do |o|
        o.banner = "Usage: upctl [options] #{COMMANDS.keys.join("|")}"
        o.on("-C", "--control-url URL", "The server's --control-url") { |v| @options[:control_url] = v }
        o.on("-T", "--control-token TOKEN", "The server's --control-token") { |v| @options[:control_token] = v }
        o.on("-P", "--pid-file FILE", "Send a signal to the pid in FILE instead (not for stats)") { |v| @options[:pid_file] = v }
        o.on("-v", "--version", "Print the version") { @out.puts "UP! #{Up::VERSION}" }
        o.on("-h", "--help", "Print this help") { @out.puts o }
      end
      rest = parser.parse(@argv)
      return nil if rest.empty? && (@argv.include?("-h") || @argv.include?("--help") || @argv.include?("-v") || @argv.include?("--version"))
      raise UsageError, "one command: #{COMMANDS.keys.join(", ")}" unless rest.size == 1
      raise UsageError, "unknown command #{rest.first}" unless COMMANDS.key?(rest.first)
      raise UsageError, "--control-url or --pid-file, please" unless @options[:control_url] || @options[:pid_file]

      rest.first
    rescue OptionParser::ParseError => e
      raise UsageError, e.message
    end

    # GET /COMMAND?token=... on the control endpoint, one connection, read to its close.
    def over_http(command)
      bind = Bind.parse(@options[:control_url], nil)
      socket = bind.unix? ? Socket.unix(bind.path) : Socket.tcp(bind.host, bind.port, connect_timeout: 5)
      token = URI.encode_www_form_component(@options[:control_token].to_s)
      socket.write("GET /#{command}?token=#{token} HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n")
      status, body = response(socket)
      (status == 200 ? @out : @err).puts(body)
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
      signal = COMMANDS.fetch(command) or raise UsageError, "stats needs --control-url"
      pid = Integer(File.read(@options[:pid_file]).strip, 10)
      Process.kill(signal, pid)
      @out.puts "sent #{signal} to #{pid}"
      0
    rescue ArgumentError
      raise UsageError, "#{@options[:pid_file]} holds no pid"
    end
  end
end
