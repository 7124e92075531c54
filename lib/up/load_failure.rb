# frozen_string_literal: true

require "rbconfig"

module Up
  # What went wrong while config.ru loaded, said in one line a user can act on: a syntax error
  # as "config.ru:3: syntax error, unexpected ...", an exception as "app.rb:12: boom
  # (RuntimeError)" at the app's own frame (not Rack's or a gem's), a missing gem with the
  # command that adds it. Up::Launcher turns what loading raised into a StartError with this
  # line; Up::Node::Bundle words a missing require on the Node runtimes with .missing.
  class LoadFailure
    # Frames in these are not the app's: Ruby's own library and UP!'s.
    NOT_APP = [RbConfig::CONFIG["rubylibdir"], File.expand_path("..", __dir__)].freeze

    # "cannot load such file -- NAME", and for a gem's name how to add it.
    def self.missing(name)
      hint = gem_name(name) && "; is its gem in the Gemfile? (bundle add #{gem_name(name)})"
      "cannot load such file -- #{name}#{hint}"
    end

    # The gem a require most likely needs: "sinatra/base" is sinatra's. None for a path.
    def self.gem_name(feature)
      return nil if feature.start_with?("/", "./", "../") || feature.empty?

      feature.split("/").first.delete_suffix(".rb")
    end

    def initialize(error)
      @error = error
    end

    def to_s
      case @error
      when SyntaxError then syntax_error
      when LoadError then "#{where}#{load_error}"
      else "#{where}#{first_line(@error.message)} (#{@error.class})"
      end
    end

    private

    # MRI's message starts "FILE:LINE: syntax error, ...", then shows the code. Prism's first
    # line only says "syntax errors found"; what it found follows a caret.
    def syntax_error
      first = first_line(@error.message)
      file, line, what = first.match(/\A(.+?):(\d+): (.*)\z/)&.captures
      return first unless file

      if what.start_with?("syntax errors found")
        found = @error.message[/^\s*\|\s*\^+ (.+)$/, 1]
        what = "syntax error, #{found.strip}" if found
      end
      "#{display(file)}:#{line}: #{what}"
    end

    def load_error
      path = @error.path
      return "#{first_line(@error.message)} (LoadError)" unless path && !File.absolute_path?(path)

      LoadFailure.missing(path)
    end

    # "config.ru:2: ", where the app's code raised: its first frame outside Ruby's library,
    # installed gems and UP!.
    def where
      frames = @error.backtrace_locations || []
      frame = frames.find { |f| app_frame?(f.absolute_path || f.path) } || frames.first
      frame ? "#{display(frame.absolute_path || frame.path)}:#{frame.lineno}: " : ""
    end

    def app_frame?(path)
      return false if path.nil? || path.start_with?("<internal:") || path.include?("/gems/")

      NOT_APP.none? { |dir| path.start_with?("#{dir}/") }
    end

    def first_line(text)
      text.to_s.lines.first.to_s.chomp
    end

    def display(file)
      file.start_with?("#{Dir.pwd}/") ? file.delete_prefix("#{Dir.pwd}/") : file
    end
  end
end
