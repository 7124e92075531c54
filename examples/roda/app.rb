# frozen_string_literal: true

require "roda"

# A small Roda app that runs unmodified on up_ruby (MRI) and up_node (Opal on Node): the
# routing tree, r.params from the query and form bodies, an encrypted cookie session, JSON
# results, halt, cookies and the other verbs. examples/roda/config.ru runs it.
class RodaExample < Roda
  # Sessions need a secret of at least 64 bytes; this one is for development only.
  DEV_SECRET = "up-example-roda-development-secret-do-not-use-in-production-0123456789"

  plugin :sessions, secret: ENV.fetch("SESSION_SECRET", DEV_SECRET)
  plugin :json
  plugin :halt
  plugin :cookies, path: "/"
  plugin :all_verbs

  route do |r|
    r.root do
      "Hello from Roda\n"
    end

    # GET /hello/Ada
    r.get "hello", String do |name|
      "Hello, #{name}!\n"
    end

    # /items/3: GET gives it as JSON, PUT and DELETE say what they would do.
    r.on "items", Integer do |id|
      r.get { { "id" => id, "name" => "item #{id}" } }
      r.put { "updated item #{id}\n" }
      r.delete { "deleted item #{id}\n" }
    end

    # GET /params?a=1&b[]=2 or POST /params with a form body: the params Rack parsed.
    r.is "params" do
      r.params
    end

    # POST /greet with name=...: a form post answered as text.
    r.post "greet" do
      name = r.params["name"].to_s
      r.halt(422, "name is required\n") if name.empty?
      "Nice to meet you, #{name}.\n"
    end

    # The session: each POST /visits counts one more visit, GET /visits reads the count,
    # POST /logout forgets it.
    r.on "visits" do
      r.get { { "visits" => session["visits"].to_i } }
      r.post do
        session["visits"] = session["visits"].to_i + 1
        { "visits" => session["visits"] }
      end
    end

    r.post "logout" do
      clear_session
      "bye\n"
    end

    # A plain cookie, set and read back.
    r.get "flavour" do
      response.set_cookie("flavour", "oatmeal")
      "cookie set; you sent #{r.cookies["flavour"].inspect}\n"
    end

    # Only for admins, and nobody is one.
    r.get "admin" do
      r.halt(403, { "error" => "forbidden" })
    end
  end
end
