# frozen_string_literal: true

# An Up::Server on 127.0.0.1 with a port the kernel picks, run on a background thread, serving
# HTTPS when given an Up::TLSContext (tls:). Its log is kept in a StringIO so tests can assert
# what was logged (app errors, backtraces).
class TestServer
  attr_reader :port, :server, :log

  def initialize(app, tls: nil, **options)
    @log = StringIO.new
    @server = Up::Server.new(app, { threads: 1 }.merge(options))
    @server.log_io = @log
    @server.listen("127.0.0.1", 0, tls)
    @port = @server.addresses.first[1]
    @thread = Thread.new { @server.run }
    @thread.report_on_exception = true
  end

  def stop(timeout: 10)
    return unless @thread

    @server.stop
    raise "the server did not stop within #{timeout}s" unless @thread.join(timeout)

    @thread = nil
  end

  def log_text
    @log.string
  end
end
