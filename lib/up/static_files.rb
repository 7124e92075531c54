# frozen_string_literal: true

require "rack/mime"
require_relative "start_error"
require_relative "static_site"
require_relative "acme/store"

module Up
  # Which files the engine answers before the app, as the static: option of Up::Server.new
  # (ext/up/ruby/static.c): the public directory, the --static groups, --static-only, the site
  # config, and the media types of Rack::Mime (so a file has the same content-type whether the
  # engine or Rack::Files sends it). Made by Up::Runner for each server from the settings and
  # the app; owns nothing.
  #
  # The public directory is, in order: --public DIR; none with --no-public; the Rails app's
  # public_path when the app is a Rails app; ./public beside config.ru when it exists. A Rails
  # app's config.public_file_server.headers go on every file, as ActionDispatch::Static would
  # send them.
  class StaticFiles
    # What answers in --static-only mode the few requests the engine passes on (upgrades).
    NOT_FOUND_APP = ->(_env) { [404, { "content-type" => "text/plain" }, ["Not Found\n"]] }

    # options: checked settings (Up::Options); app: the loaded app; dir: where relative paths
    # and config.ru are taken from (the directory UP! started in).
    def initialize(options, app: nil, dir: Dir.pwd)
      @options = options
      @app = app
      @dir = dir
    end

    # The Hash for Server.new's static: option, or nil when there is nothing to serve. Raises
    # StartError for a directory that is not there or a bad site config.
    def to_h
      site = load_site
      dirs = mounts(site)
      return nil if dirs.empty?

      {
        dirs: dirs,
        mime: Rack::Mime::MIME_TYPES,
        only: !@options[:static_only].nil?,
        dotfiles: @options[:static_dotfiles],
        dir_listing: @options[:dir_listing],
        clean_urls: site&.clean_urls? || false,
        https_only: site&.https_only? || false,
        error_page: site&.error_page,
        headers: rails_headers + (site&.headers || []),
        redirects: site&.redirects || [],
        trusted_proxies: @options[:trusted_proxy]
      }
    end

    private

    def load_site
      path = @options[:static_config]
      path && StaticSite.load(File.expand_path(path, @dir))
    rescue StaticSite::Error => e
      raise StartError, e.message
    end

    # [["/", dir], ["/assets", dir], ...] with absolute, existing directories.
    def mounts(site)
      root = public_dir(site)
      list = acme_mount + (root ? [["/", root]] : [])
      @options[:static].each do |spec|
        prefix, dirs = spec.split("=", 2)
        dirs.split(":").reject(&:empty?).each { |d| list << [prefix, directory(d, "--static #{spec}")] }
      end
      list
    end

    # --acme-domain: the HTTP-01 answers (RFC 8555 §8.3) that Up::Acme::Order writes, before
    # the app and any other file.
    def acme_mount
      return [] if @options[:acme_domains].empty?

      [["/.well-known/acme-challenge", Acme::Store.new(File.expand_path(@options[:acme_dir], @dir)).http_dir]]
    end

    def public_dir(site)
      only = @options[:static_only]
      return directory(only == true ? site&.root || "." : only, "--static-only") if only

      case @options[:public]
      when false then nil
      when String then directory(@options[:public], "--public")
      else
        return directory(site.root, "--static-config root") if site

        default_public
      end
    end

    def default_public
      candidate = rails_app? ? ::Rails.public_path.to_s : File.join(File.dirname(rackup_path), "public")
      File.directory?(candidate) ? File.expand_path(candidate) : nil
    end

    def rackup_path
      File.expand_path(@options[:rackup], @dir)
    end

    def directory(path, flag)
      full = File.expand_path(path, @dir)
      raise StartError, "#{flag}: #{path} is not a directory" unless File.directory?(full)

      full
    end

    def rails_app?
      defined?(::Rails) && ::Rails.respond_to?(:application) && ::Rails.application &&
        ::Rails.respond_to?(:public_path) && !@options[:static_only]
    end

    def rails_headers
      return [] unless rails_app? && @options[:public].nil?

      headers = ::Rails.application.config.public_file_server.headers
      return [] unless headers.is_a?(Hash)

      headers.map { |name, value| ["/**", name.to_s, value.to_s] }
    rescue NoMethodError
      []
    end
  end
end
